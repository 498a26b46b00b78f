"""PlanBuilder: what ops talk to while a step plan is being built.

Ops ask it for buffers, primitives (through the shared cache), parameters and reorders; it
appends bound calls to the forward or backward list. Buffers are allocated here, once; running
the plan afterwards allocates nothing.
"""

from contextlib import contextmanager

import numpy as np

from ..binding import constants as dnnl
from ..binding.library import lib
from ..binding.memory import Memory, aligned_bytes, layout_key
from ..binding.primitive import BoundCall, primitive_cache, reorder_pd
from .gradient_sums import DeferredReorder, GradientSums
from .liveness import share_buffers
from .sub_batches import SubBatchUnsupported, with_batch


class KernelCall:
    """A plan entry that is not a oneDNN primitive: a compiled numba kernel and its arrays."""

    __slots__ = ("function", "arguments", "label")

    def __init__(self, function, arguments, label):
        self.function = function
        self.arguments = tuple(arguments)
        self.label = label

    def run(self):
        self.function(*self.arguments)

    def relabeled(self, label):
        return type(self)(self.function, self.arguments, label)


class MemoryKernelCall(KernelCall):
    """A kernel call whose buffer arguments are plan Memory objects, read as arrays at every
    run: unlike captured arrays, they keep their place in liveness-based buffer sharing (the
    bytes of a Memory are only final once the plan is complete)."""

    __slots__ = ("args",)

    def __init__(self, function, arguments, label):
        super().__init__(function, arguments, label)
        # what liveness reads to find each buffer's lifetime, as for a primitive's arguments
        self.args = {index: argument for index, argument in enumerate(self.arguments)
                     if isinstance(argument, Memory)}

    def run(self):
        self.function(*[argument.as_array() if isinstance(argument, Memory) else argument
                        for argument in self.arguments])


class PlanBuilder(GradientSums):
    """Collects forward and backward calls over buffers allocated once.

    Args:
        parameters: the model's ParameterStore (values, gradients, layouts).
        training: build forward_training primitives (with workspaces) and backward calls.
        data_type: oneDNN data type of activations: f32, or bf16 under mixed precision.
    """

    def __init__(self, parameters, training=True, data_type=dnnl.f32):
        self.parameters = parameters
        self.training = training
        self.data_type = data_type
        self.prop_kind = dnnl.forward_training if training else dnnl.forward_inference
        self.forward_calls = []
        self.backward_calls = []
        self.reorder_labels = []
        self._parameter_views = {}
        self._derived = {}           # key -> what derived() planned for it
        self.derived_calls = set()   # id() of the forward calls derived() planned
        self._after_sums = {}        # key -> a function planning calls after the gradient sums
        self._scratchpad_memories = []
        self._scratchpad_bytes = 0
        self._scratchpad_storage = aligned_bytes(64)
        self._slice = None           # (phase, index, count) while planning one sub-batch
        self._slice_cursor = 0
        self._slice_buffers = {}     # (phase, n-th allocation) -> bytes of all the slices
        self._slices = {}            # id(memory) -> (memory, bytes of all slices, count)
        self._slice_keys = {}        # id(memory) -> (phase, n-th allocation), forward phase
        self._transient_buffers = {}
        self._pending_sums = {}      # parameter name -> (gradient, later sub-batches' parts)
        self._shared_grads = set()   # id(Memory) of gradient buffers with several readers
        self._written = set()        # parameters whose gradient buffer a call already writes
        self._pooled = []            # whole-batch buffers finish() lays out by liveness
        self._kept = set()           # id(Memory) of pooled buffers that keep their own bytes
        self._reordered = {}         # (id(source), layout) -> target, inference forward only
        self.planned_bytes = {}
        self.loss_terms = []         # see loss_term()

    # -- buffers and primitives -------------------------------------------------------------
    def allocate(self, desc):
        if self._slice is None:
            memory = Memory(desc)
            self._pooled.append(memory)  # finish() may move it into the shared arena
            return memory
        phase, index, count = self._slice
        key = (phase, self._slice_cursor)
        self._slice_cursor += 1
        # Backward buffers are used up within their sub-batch: one buffer serves them all and
        # stays in cache. Forward outputs are kept for backward: one slice each.
        shared = phase == "backward"
        size = desc.size if shared else desc.size * count
        if index == 0:
            self._slice_buffers[key] = aligned_bytes(size)
        storage = self._slice_buffers.get(key)
        if storage is None or storage.nbytes != size:
            raise SubBatchUnsupported(f"sub-batch {index} allocates differently from the first")
        if shared:
            return Memory(desc, storage)
        memory = Memory(desc, storage[index * desc.size:(index + 1) * desc.size])
        self._slice_keys[id(memory)] = key
        return self._register(memory, storage, count)

    def keep(self, memory):
        """Give `memory` bytes of its own (a plan edge the user reads): never shared."""
        self._kept.add(id(memory))
        return memory

    def primitive(self, key, make_pd):
        """A ready-to-run primitive from the process cache; `make_pd()` builds it on a miss."""
        return primitive_cache.get(key, make_pd)

    def bind(self, primitive, args, label):
        """A BoundCall with the plan's shared scratchpad attached."""
        args = dict(args)
        if primitive.scratchpad_desc is not None:
            size = primitive.scratchpad_desc.size
            if size > self._scratchpad_bytes:
                self._scratchpad_bytes = size
                self._scratchpad_storage = aligned_bytes(size)
            memory = Memory(primitive.scratchpad_desc, self._scratchpad_storage)
            self._scratchpad_memories.append(memory)
            args[dnnl.ARG_SCRATCHPAD] = memory
        return BoundCall(primitive, args, label)

    def add_forward(self, call):
        self.forward_calls.append(call)

    def add_backward(self, call):
        self.backward_calls.append(call)
        # Gradients written in a layout other than the stored one are reordered right after.
        for memory in getattr(call, "args", {}).values():
            if isinstance(memory, DeferredReorder):
                memory.flush()

    def kernel(self, function, arguments, label):
        return KernelCall(function, arguments, label)

    def memory_kernel(self, function, arguments, label):
        """A kernel call taking plan Memory objects (see MemoryKernelCall)."""
        return MemoryKernelCall(function, arguments, label)

    def loss_term(self):
        """A one-float array a forward kernel writes a penalty into each step (an activity
        regularizer's); the plan adds every term to the loss it reports."""
        term = np.zeros(1, dtype=np.float32)
        self.loss_terms.append(term)
        return term

    # -- layout -----------------------------------------------------------------------------
    def reorder(self, source, desc, label, backward=False):
        """`source` (a Memory) in layout `desc`: itself when it already is, else a new buffer
        filled by a reorder call added to the forward (or backward) list."""
        if source.desc == desc:
            return source
        # Two readers that want the same tensor in the same layout (a residual block's input:
        # the next conv and the add fused into a later conv) share one reorder in inference
        # plans, where a tensor is only written again after an overwrite() call.
        memo = None
        if not self.training and not backward and self._slice is None:
            memo = (id(source), layout_key(desc))
            if memo in self._reordered:
                return self._reordered[memo][1]
        target = self.allocate(desc)
        if memo is not None:
            self._reordered[memo] = (source, target)  # the source stays alive: ids stay unique
        key = ("reorder", layout_key(source.desc), layout_key(desc))
        primitive = self.primitive(key, lambda: reorder_pd(source.desc, desc))
        call = self.bind(primitive, {dnnl.ARG_FROM: source, dnnl.ARG_TO: target}, label)
        (self.add_backward if backward else self.add_forward)(call)
        self.reorder_labels.append(label)
        return target

    def overwrite(self, memory):
        """Say that a call is about to write over `memory` in place (a convolution adding into
        its residual input): reorders taken from it, or sharing its bytes, are stale after."""
        self._reordered = {key: (source, target) for key, (source, target)
                           in self._reordered.items()
                           if source is not memory and target is not memory}
        return memory

    # -- parameters -------------------------------------------------------------------------
    def param(self, name, desc):
        """The parameter's value in layout `desc` (a reorder per step if it is kept in another;
        one reorder per layout, shared by every primitive that reads that layout)."""
        key = (name, layout_key(desc))
        if key not in self._parameter_views:
            value = self.parameters.value_memory(name, desc)
            current, self._slice = self._slice, None  # weights are whole, never sliced
            try:
                self._parameter_views[key] = self.reorder(value, desc, f"{name} to layout")
            finally:
                self._slice = current
        return self._parameter_views[key]

    def derived(self, key, make):
        """A value computed from parameters once per step (a convolution's weights times a
        following per-channel scale): `make()` plans it on the first request, outside any
        sub-batch (its buffers are whole, its calls join the forward list once); later
        requests with the same key get the same result."""
        if key not in self._derived:
            current, self._slice = self._slice, None
            first = len(self.forward_calls)
            try:
                self._derived[key] = make()
            finally:
                self._slice = current
            self.derived_calls.update(id(call) for call in self.forward_calls[first:])
        return self._derived[key]

    def wants_grad(self, name):
        """Whether the step computes the gradient of parameter `name` (not when frozen)."""
        return self.training and self.parameters.trainable(name)

    def writable(self, memory):
        """Whether an op may overwrite the gradient buffer `memory` it was handed (not when the
        plan handed the same buffer to another consumer too, at a fan-out)."""
        return id(memory) not in self._shared_grads

    def share(self, memory):
        """Mark a gradient buffer handed to more than one consumer (see `writable`)."""
        self._shared_grads.add(id(memory))

    def master_layout(self, name, desc):
        """Keep the f32 master copy of `name` in layout `desc` (if not laid out yet)."""
        self.parameters.value_memory(name, desc)

    # -- sub-batches ------------------------------------------------------------------------
    @contextmanager
    def sub_batch(self, phase, index, count):
        """Plan slice `index` of `count` equal slices of the batch.

        Meanwhile, in the forward phase, the n-th buffer allocated is slice `index` of one
        buffer shared by all the slices (so slices are back to back and the whole batch can be
        viewed at once); in the backward phase it is the same buffer for every slice. Parameter
        gradients of slices after the first are added to the first one's.
        """
        self._slice = (phase, index, count)
        self._slice_cursor = 0
        try:
            yield
        finally:
            self._slice = None

    def transient(self, memory):
        """Declare that nothing reads `memory` after the consumer about to be planned (not
        backward, not a later op): in a sub-batch it then moves to one buffer shared by every
        sub-batch, so it is still in cache when that consumer reads it. Call it before
        planning the consumer (numba kernels capture arrays when they are planned)."""
        key = self._slice_keys.pop(id(memory), None)
        if key is None:
            return memory
        index = self._slice[1] if self._slice is not None else 0
        if index == 0 or key not in self._transient_buffers:
            self._transient_buffers[key] = aligned_bytes(memory.desc.size)
        storage = self._transient_buffers[key]
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

    def finish(self):
        """Point every scratchpad memory at one buffer of the largest size any primitive needs."""
        storage = aligned_bytes(max(self._scratchpad_bytes, 64))
        for memory in self._scratchpad_memories:
            memory.storage = storage
            lib.dnnl_memory_set_data_handle(memory.handle, storage.ctypes.data)
        self._scratchpad_storage = storage
        calls = self.forward_calls + self.backward_calls
        self._arena, before, after = share_buffers(self._pooled, self._kept, calls, KernelCall)
        sliced = sum(b.nbytes for b in self._slice_buffers.values())
        sliced += sum(b.nbytes for b in self._transient_buffers.values())
        self.planned_bytes = {"buffers": after + sliced + storage.nbytes,
                              "buffers_without_reuse": before + sliced + storage.nbytes,
                              "scratchpad": storage.nbytes}
        self._pooled = []
        return self
