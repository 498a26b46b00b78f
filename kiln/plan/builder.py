"""PlanBuilder: what ops talk to while a step plan is being built.

Ops ask it for buffers, primitives (through the shared cache), parameters and reorders; it
appends bound calls to the forward or backward list. Buffers are allocated here, once; running
the plan afterwards allocates nothing.
"""

from ..binding import constants as dnnl
from ..binding.library import lib
from ..binding.memory import Memory, aligned_bytes, layout_key
from ..binding.primitive import BoundCall, primitive_cache, reorder_pd


class KernelCall:
    """A plan entry that is not a oneDNN primitive: a compiled numba kernel and its arrays."""

    __slots__ = ("function", "arguments", "label")

    def __init__(self, function, arguments, label):
        self.function = function
        self.arguments = tuple(arguments)
        self.label = label

    def run(self):
        self.function(*self.arguments)


class PlanBuilder:
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
        self._scratchpad_memories = []
        self._scratchpad_bytes = 0
        self._scratchpad_storage = aligned_bytes(64)

    # -- buffers and primitives -------------------------------------------------------------
    def allocate(self, desc):
        return Memory(desc)

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
            if isinstance(memory, _DeferredReorder):
                memory.flush()

    def kernel(self, function, arguments, label):
        return KernelCall(function, arguments, label)

    # -- layout -----------------------------------------------------------------------------
    def reorder(self, source, desc, label, backward=False):
        """`source` (a Memory) in layout `desc`: itself when it already is, else a new buffer
        filled by a reorder call added to the forward (or backward) list."""
        if source.desc == desc:
            return source
        target = self.allocate(desc)
        key = ("reorder", layout_key(source.desc), layout_key(desc))
        primitive = self.primitive(key, lambda: reorder_pd(source.desc, desc))
        call = self.bind(primitive, {dnnl.ARG_FROM: source, dnnl.ARG_TO: target}, label)
        (self.add_backward if backward else self.add_forward)(call)
        self.reorder_labels.append(label)
        return target

    # -- parameters -------------------------------------------------------------------------
    def param(self, name, desc):
        """The parameter's value in layout `desc` (a reorder per step if it is kept in another;
        one reorder per layout, shared by every primitive that reads that layout)."""
        key = (name, layout_key(desc))
        if key not in self._parameter_views:
            value = self.parameters.value_memory(name, desc)
            self._parameter_views[key] = self.reorder(value, desc, f"{name} to layout")
        return self._parameter_views[key]

    def master_layout(self, name, desc):
        """Keep the f32 master copy of `name` in layout `desc` (if not laid out yet)."""
        self.parameters.value_memory(name, desc)

    def param_grad(self, name, desc):
        """Where a backward primitive should write the gradient of `name` in layout `desc`."""
        grad = self.parameters.grad_memory(name)
        if grad.desc == desc:
            return grad
        return _DeferredReorder(self, desc, grad, f"{name} gradient to layout")

    def finish(self):
        """Point every scratchpad memory at one buffer of the largest size any primitive needs."""
        storage = aligned_bytes(max(self._scratchpad_bytes, 64))
        for memory in self._scratchpad_memories:
            memory.storage = storage
            lib.dnnl_memory_set_data_handle(memory.handle, storage.ctypes.data)
        self._scratchpad_storage = storage
        return self


class _DeferredReorder(Memory):
    """A temporary gradient buffer in a primitive's layout, reordered into the stored gradient
    right after the primitive that writes it (`add_backward` does this)."""

    def __init__(self, builder, desc, grad, label):
        super().__init__(desc)
        self._builder, self._grad, self._label = builder, grad, label

    def flush(self):
        key = ("reorder", layout_key(self.desc), layout_key(self._grad.desc))
        builder = self._builder
        primitive = builder.primitive(key, lambda: reorder_pd(self.desc, self._grad.desc))
        # Appended directly: add_backward would see `self` among the args and flush again.
        builder.backward_calls.append(builder.bind(primitive, {dnnl.ARG_FROM: self,
                                                               dnnl.ARG_TO: self._grad},
                                                   self._label))
        builder.reorder_labels.append(self._label)

