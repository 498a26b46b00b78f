"""Buffer reuse by liveness: plan buffers whose lifetimes do not overlap share bytes.

Every buffer a plan allocates is live from the first call that touches it to the last, in the
order the step runs (forward, then backward). Once the plan is complete those intervals are
known, so the buffers are laid out in one arena where two buffers overlap in bytes only if
they never overlap in time: the activation memory of a training step becomes what backward
still needs at its peak, not one buffer per op.

A buffer that other Memory objects view (a reshaped descriptor over the same bytes, a window,
a sub-batch slice) moves together with its views: their uses count towards its lifetime and
they are pointed at the same place in the arena. Attention is the case that needs it: its
batched matmuls read the projections and the score tensors through reshaped views, and the
score tensors, (batch, heads, steps, steps) each, are the largest buffers of the step.
(keras.io's timeseries transformer, 4 blocks over 500 steps, batch 64: 4.1 GiB planned
where pinning the viewed buffers planned 13.3 GiB, and 16.5 GiB without any sharing.)

Some buffers keep their own bytes ("pinned"): ones a numba kernel captured as a numpy array
when it was planned (an array cannot be pointed elsewhere), ones a Memory object overlaps
without lying inside them, and the plan's user-visible edges.
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


def call_memories(call):
    """The plan Memory objects a call binds (a primitive's or a MemoryKernelCall's args)."""
    return [m for m in getattr(call, "args", {}).values() if isinstance(m, Memory)]


def views_and_pins(pooled, calls, kernel_type, kept=()):
    """Which pooled buffers others alias, and how.

    Returns ({id(view): pooled buffer it lies inside}, ids of pooled buffers that must keep
    their bytes): a Memory of a call that is not pooled itself and lies inside one pooled
    buffer is a view that moves with it; one that straddles pooled bytes otherwise, or an
    array a kernel captured or a `kept` memory, pins every pooled buffer it overlaps."""
    pooled_ids = {id(m) for m in pooled}
    spans = sorted((_address_range(m.storage), m) for m in pooled)
    starts = [span[0][0] for span in spans]
    views, pinned = {}, set()

    def overlapping(start, end):
        index = bisect.bisect_right(starts, start) - 1
        for (s, e), memory in spans[max(index, 0):]:
            if s >= end:
                break
            if e > start:
                yield (s, e), memory

    for memory in kept:
        pinned.update(id(m) for _, m in overlapping(*_address_range(memory.storage)))
    for call in calls:
        if isinstance(call, kernel_type):
            for array in kernel_arrays(call.arguments):
                pinned.update(id(m) for _, m in overlapping(*_address_range(array)))
        for memory in call_memories(call):
            if id(memory) in pooled_ids or id(memory) in views:
                continue
            start, end = _address_range(memory.storage)
            hits = list(overlapping(start, end))
            if len(hits) == 1 and hits[0][0][0] <= start and end <= hits[0][0][1]:
                views[id(memory)] = hits[0][1]
            else:
                pinned.update(id(m) for _, m in hits)
    return views, pinned


def intervals(pooled, calls, views=None):
    """id(memory) -> (first call index, last call index) over the calls that bind it or one
    of its `views` ({id(view): pooled memory})."""
    pooled_ids = {id(m) for m in pooled}
    views = views or {}
    spans = {}
    for index, call in enumerate(calls):
        for memory in getattr(call, "args", {}).values():
            key = id(views[id(memory)]) if id(memory) in views else id(memory)
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


def share_buffers(pooled, kept, calls, kernel_type):
    """Move every pooled, unpinned memory into one arena by liveness. `kept`: memories whose
    bytes must stay (read by the caller): pooled ones, or views, which keep the pooled buffers
    they overlap.

    Returns (arena storage or None, bytes before, bytes after) for the pooled buffers."""
    views, pinned_ids = views_and_pins(pooled, calls, kernel_type, kept)
    spans = intervals(pooled, calls, views)
    movable = [m for m in pooled if id(m) not in pinned_ids and id(m) in spans] if REUSE else []
    before = sum(m.storage.nbytes for m in pooled)
    kept = sum(m.storage.nbytes for m in pooled if id(m) not in {id(x) for x in movable})
    if not movable:
        return None, before, before
    rounded = [-(-m.desc.size // ALIGNMENT) * ALIGNMENT for m in movable]
    offsets, total = place([(size, spans[id(m)])
                            for size, m in zip(rounded, movable, strict=True)])
    arena = aligned_bytes(max(total, ALIGNMENT))
    views_of = {}
    for view in {id(v): v for call in calls for v in call_memories(call)}.values():
        if id(view) in views:
            views_of.setdefault(id(views[id(view)]), []).append(view)
    for memory, offset, size in zip(movable, offsets, rounded, strict=True):
        base_start = memory.storage.ctypes.data
        for view in views_of.get(id(memory), ()):  # before the base's bytes are replaced
            view_offset = offset + view.storage.ctypes.data - base_start
            _point(view, arena[view_offset:view_offset + view.storage.nbytes])
        _point(memory, arena[offset:offset + size])
    return arena, before, kept + total


def _point(memory, storage):
    memory.storage = storage
    lib.dnnl_memory_set_data_handle(memory.handle, storage.ctypes.data)
