"""The buffers of a plan's sub-batches (which ops run in sub-batches: sub_batches.py).

While slice `index` of `count` is planned, in the forward phase the n-th buffer allocated is
slice `index` of one buffer shared by all the slices (so slices are back to back and the whole
batch can be viewed at once: whole()); in the backward phase it is the same buffer for every
slice, used up within its sub-batch and still in cache for the next. Every sub-batch must
allocate the same buffers in the same order as the first (else SubBatchUnsupported, and the
plan is built for the whole batch instead).
"""

from contextlib import contextmanager

from ..binding.library import lib
from ..binding.memory import Memory, aligned_bytes
from .sub_batches import SubBatchUnsupported, with_batch


class SubBatchBuffers:
    """Which sub-batch is being planned, and its buffers."""

    def __init__(self):
        self._slice = None           # (phase, index, count) while planning one sub-batch
        self._cursor = 0             # allocations so far in this sub-batch
        self._buffers = {}           # (phase, n-th allocation) -> bytes of all the slices
        self._slices = {}            # id(memory) -> (memory, bytes of all slices, count)
        self._keys = {}              # id(memory) -> (phase, n-th allocation), forward phase
        self._transient = {}         # (phase, n-th allocation) -> bytes shared by sub-batches

    @property
    def active(self):
        """Whether a sub-batch is being planned (allocate() must then come here)."""
        return self._slice is not None

    @property
    def index(self):
        """The index of the sub-batch being planned; None outside sub-batches."""
        return None if self._slice is None else self._slice[1]

    @contextmanager
    def planning(self, phase, index, count):
        """Plan slice `index` of `count` equal slices of the batch (see the module)."""
        self._slice = (phase, index, count)
        self._cursor = 0
        try:
            yield
        finally:
            self._slice = None

    @contextmanager
    def outside(self):
        """Plan what is whole even inside a sub-batch (weights, values derived from them):
        allocations meanwhile are whole-batch buffers."""
        current, self._slice = self._slice, None
        try:
            yield
        finally:
            self._slice = current

    def allocate(self, desc):
        """The next buffer of the sub-batch being planned (see the module)."""
        phase, index, count = self._slice
        key = (phase, self._cursor)
        self._cursor += 1
        # Backward buffers are used up within their sub-batch: one buffer serves them all and
        # stays in cache. Forward outputs are kept for backward: one slice each.
        shared = phase == "backward"
        size = desc.size if shared else desc.size * count
        if index == 0:
            self._buffers[key] = aligned_bytes(size)
        storage = self._buffers.get(key)
        if storage is None or storage.nbytes != size:
            raise SubBatchUnsupported(f"sub-batch {index} allocates differently from the first")
        if shared:
            return Memory(desc, storage)
        memory = Memory(desc, storage[index * desc.size:(index + 1) * desc.size])
        self._keys[id(memory)] = key
        return self._register(memory, storage, count)

    def transient(self, memory):
        """Move a forward sub-batch buffer that nothing reads after its next consumer to one
        buffer shared by every sub-batch (PlanBuilder.transient says when)."""
        key = self._keys.pop(id(memory), None)
        if key is None:
            return memory
        index = self._slice[1] if self._slice is not None else 0
        if index == 0 or key not in self._transient:
            self._transient[key] = aligned_bytes(memory.desc.size)
        storage = self._transient[key]
        memory.storage = storage
        lib.dnnl_memory_set_data_handle(memory.handle, storage.ctypes.data)
        del self._slices[id(memory)]  # no longer part of a whole-batch buffer
        return memory

    def _register(self, memory, storage, count):
        self._slices[id(memory)] = (memory, storage, count)
        return memory

    def batch_slice(self, memory, index, count):
        """Images [index * n / count, (index + 1) * n / count) of a whole-batch memory."""
        desc = with_batch(memory.desc, memory.desc.dims[0] // count)
        if desc.size * count != memory.desc.size:
            raise SubBatchUnsupported(f"{memory.desc} cannot be cut into {count} sub-batches")
        view = Memory(desc, memory.storage[index * desc.size:(index + 1) * desc.size])
        return self._register(view, memory.storage, count)

    def whole(self, memory):
        """The whole batch of which `memory` (a sub-batch buffer or slice) is one part."""
        if id(memory) not in self._slices:
            raise SubBatchUnsupported(f"{memory.desc} is not a sub-batch buffer")
        _, storage, count = self._slices[id(memory)]
        desc = with_batch(memory.desc, memory.desc.dims[0] * count)
        if desc.size != storage.nbytes:
            raise SubBatchUnsupported(f"{memory.desc} x {count} is not one dense buffer")
        return Memory(desc, storage)

    def planned_bytes(self):
        """Bytes of every sub-batch buffer (they are not in the whole-batch arena)."""
        return (sum(b.nbytes for b in self._buffers.values())
                + sum(b.nbytes for b in self._transient.values()))
