"""Buffer reuse by liveness: plan buffers whose lifetimes do not overlap share bytes.

Every buffer a plan allocates is live from the first call that touches it to the last, in the
order the step runs (forward, then backward). Once the plan is complete those intervals are
known, so the buffers are laid out in one arena where two buffers overlap in bytes only if
they never overlap in time: the activation memory of a training step becomes what backward
still needs at its peak, not one buffer per op.

Some buffers keep their own bytes ("pinned"): ones a numba kernel captured as a numpy array
when it was planned, ones another Memory object views (sub-batch slices, reshaped views), and
the plan's user-visible edges.
"""

import bisect

import numpy as np

from ..binding.library import lib
from ..binding.memory import ALIGNMENT, Memory, aligned_bytes

# Tests switch reuse off to check that it changes no result.
REUSE = True


def _address_range(storage):
    start = storage.ctypes.data
    return start, start + storage.nbytes


def kernel_arrays(arguments):
    """The numpy arrays among a kernel's arguments, also inside tuples and lists."""
    for argument in arguments:
        if isinstance(argument, np.ndarray):
            yield argument
        elif isinstance(argument, (tuple, list)):
            yield from kernel_arrays(argument)


def pinned_by_overlap(pooled, calls, kernel_type):
    """ids of pooled memories whose bytes something other than the memory itself uses."""
    pooled_ids = {id(m) for m in pooled}
    spans = sorted((_address_range(m.storage), m) for m in pooled)
    starts = [span[0][0] for span in spans]
    pinned = set()

    def pin_overlapping(start, end):
        index = bisect.bisect_right(starts, start) - 1
        for (s, e), memory in spans[max(index, 0):]:
            if s >= end:
                break
            if e > start:
                pinned.add(id(memory))

    for call in calls:
        if isinstance(call, kernel_type):
            for array in kernel_arrays(call.arguments):
                pin_overlapping(*_address_range(array))
        else:
            for memory in call.args.values():
                if isinstance(memory, Memory) and id(memory) not in pooled_ids:
                    pin_overlapping(*_address_range(memory.storage))
    return pinned


def intervals(pooled, calls):
    """id(memory) -> (first call index, last call index) over the calls that bind it."""
    pooled_ids = {id(m) for m in pooled}
    spans = {}
    for index, call in enumerate(calls):
        for memory in getattr(call, "args", {}).values():
            key = id(memory)
            if key in pooled_ids:
                first, _ = spans.get(key, (index, index))
                spans[key] = (first, index)
    return spans


def place(sizes_and_spans):
    """Greedy placement, largest first, each at the lowest offset free over its lifetime.
    Args: list of (size, (first, last)). Returns (offsets, arena size)."""
    order = sorted(range(len(sizes_and_spans)), key=lambda i: -sizes_and_spans[i][0])
    placed, offsets, top = [], [0] * len(sizes_and_spans), 0
    for i in order:
        size, (first, last) = sizes_and_spans[i]
        busy = sorted((offset, offset + other) for offset, other, (start, end) in placed
                      if not (end < first or last < start))
        offset = 0
        for start, end in busy:
            if offset + size <= start:
                break
            offset = max(offset, end)
        offsets[i] = offset
        placed.append((offset, size, (first, last)))
        top = max(top, offset + size)
    return offsets, top


def share_buffers(pooled, pinned_ids, calls, kernel_type):
    """Move every pooled, unpinned memory into one arena by liveness.

    Returns (arena storage or None, bytes before, bytes after) for the pooled buffers."""
    pinned_ids = set(pinned_ids) | pinned_by_overlap(pooled, calls, kernel_type)
    spans = intervals(pooled, calls)
    movable = [m for m in pooled if id(m) not in pinned_ids and id(m) in spans] if REUSE else []
    before = sum(m.storage.nbytes for m in pooled)
    kept = sum(m.storage.nbytes for m in pooled if id(m) not in {id(x) for x in movable})
    if not movable:
        return None, before, before
    rounded = [-(-m.desc.size // ALIGNMENT) * ALIGNMENT for m in movable]
    offsets, total = place([(size, spans[id(m)])
                            for size, m in zip(rounded, movable, strict=True)])
    arena = aligned_bytes(max(total, ALIGNMENT))
    for memory, offset, size in zip(movable, offsets, rounded, strict=True):
        memory.storage = arena[offset:offset + size]
        lib.dnnl_memory_set_data_handle(memory.handle, memory.storage.ctypes.data)
    return arena, before, kept + total
