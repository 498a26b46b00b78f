"""The whole-batch buffers of a plan, and the arenas they end up in.

While a plan is built every buffer gets bytes of its own, because lifetimes are only known
once every call is planned; finish() then moves the buffers that may share bytes into one
arena laid out by liveness (liveness.py), and points every primitive's scratchpad at one
buffer of the largest size any of them needs (calls run one at a time).
(Sub-batch buffers are sub_batch_buffers.py's: they are laid out per sub-batch instead.)
"""

from ..binding.library import lib
from ..binding.memory import Memory, aligned_bytes
from .liveness import share_buffers


class Buffers:
    """Allocates whole-batch buffers and scratchpads; lays them out in finish()."""

    def __init__(self):
        self._pooled = []                # buffers finish() lays out by liveness
        self._kept = {}                  # id -> Memory whose bytes stay (a view: its base)
        self._scratchpads = []           # every primitive's scratchpad Memory
        self._scratchpad_bytes = 0
        self._scratchpad_storage = aligned_bytes(64)
        self.arena = None                # finish()'s shared bytes (the buffers view them)

    def new(self, desc):
        """A buffer of layout `desc`; finish() may move it into the shared arena."""
        memory = Memory(desc)
        self._pooled.append(memory)
        return memory

    def keep(self, memory):
        """Give `memory` bytes of its own (a plan edge the user reads): never shared."""
        self._kept[id(memory)] = memory
        return memory

    def scratchpad(self, desc):
        """A scratchpad Memory of layout `desc`; finish() points all of them at one buffer.
        Until then they share the largest one asked for so far (so a plan that is never
        finished still runs)."""
        if desc.size > self._scratchpad_bytes:
            self._scratchpad_bytes = desc.size
            self._scratchpad_storage = aligned_bytes(desc.size)
        memory = Memory(desc, self._scratchpad_storage)
        self._scratchpads.append(memory)
        return memory

    def finish(self, calls, kernel_type, other_bytes):
        """Lay the buffers out for `calls` (the whole step, in order; `kernel_type` is the
        call type whose captured arrays pin their buffers). Returns the plan's planned_bytes,
        counting `other_bytes` of buffers laid out elsewhere (sub-batches)."""
        storage = aligned_bytes(max(self._scratchpad_bytes, 64))
        for memory in self._scratchpads:
            memory.storage = storage
            lib.dnnl_memory_set_data_handle(memory.handle, storage.ctypes.data)
        self._scratchpad_storage = storage
        self.arena, before, after = share_buffers(self._pooled, self._kept.values(), calls,
                                                     kernel_type)
        self._pooled = []
        return {"buffers": after + other_bytes + storage.nbytes,
                "buffers_without_reuse": before + other_bytes + storage.nbytes,
                "scratchpad": storage.nbytes}
