"""ParameterStore: a model's weights, their gradients and the layouts oneDNN chose for them.

A parameter is created from its Keras value (e.g. a conv kernel as (kh, kw, in, out)). The
first primitive that reads it fixes its layout; after the first plan, all values are packed
into one arena (and all gradients into another) so one optimizer kernel updates every weight.
Reading weights back (`get_value`) reorders to the Keras layout: an edge, never a step cost.
"""

import numpy as np

from ..binding import constants as dnnl
from ..binding.memory import ALIGNMENT, Memory, MemoryDesc, aligned_bytes
from ..binding.reorder import reorder_now


class Parameter:
    """Args: name ("<layer>/<weight>"), logical dims, tag of the Keras layout, Keras value,
    trainable (False for frozen weights and for state such as BatchNormalization's moving
    statistics: no gradient, no optimizer update)."""

    def __init__(self, name, dims, user_tag, value, trainable=True):
        self.name = name
        self.trainable = trainable
        self.dims = tuple(dims)
        self.keras_shape = np.shape(value)
        # Keras' weight regularizer as coefficients of l1 * sum|w| + l2 * sum w^2, and its
        # constraint as ("non_neg",) or ("norm", min, max, rate, axes): see
        # plan/weight_penalties.py
        self.l1 = self.l2 = 0.0
        self.constraint = None
        # a user's regularizer written with keras.ops: trace(keras_shape) -> (graph, the
        # symbolic weight), planned by plan/traced_penalties.py
        self.penalty = None
        self.user_tag = user_tag
        self.user_desc = MemoryDesc.with_tag(self.dims, dnnl.f32, user_tag)
        self.pending_value = np.ascontiguousarray(value, dtype=np.float32)
        self.value = None  # Memory in the chosen layout, once a primitive has chosen one
        self.grad = None


class ParameterStore:
    def __init__(self):
        self.parameters = {}
        self.values_arena = None  # flat float32 views over all values / all gradients
        self.grads_arena = None
        self.trainable_size = 0   # floats at the start of the arenas the optimizer updates
        self.stale = False        # parameters came or went since the last plan was built
        self._packed_order = None
        self._trainable_segments = ()
        self._staging = {}  # name -> Keras-layout Memory that receive() reorders through

    def add(self, name, dims, user_tag, value, trainable=True):
        if name in self.parameters:
            raise ValueError(f"parameter {name!r} already exists")
        expected = int(np.prod(dims))
        if np.size(value) != expected:
            raise ValueError(f"parameter {name!r}: expected {expected} values for dims "
                             f"{tuple(dims)}, got array of shape {np.shape(value)}")
        self.parameters[name] = Parameter(name, dims, user_tag, value, trainable)

    def __contains__(self, name):
        return name in self.parameters

    def trainable(self, name):
        return self.parameters[name].trainable

    def set_trainable(self, name, trainable):
        """Frozen (False) parameters get no gradient and no update; the next pack() moves
        them behind the trainable ones."""
        self.parameters[name].trainable = bool(trainable)

    def release(self, name):
        """Remove `name` and return it as a new Parameter holding its current value (for
        another store to adopt); this store's plans are then stale."""
        moved = self._detached_copy(name)
        del self.parameters[name]
        self._staging.pop(name, None)
        self.stale = True
        return moved

    def receive(self, name, source):
        """Take the current value of `name` from `source`, another store (a weight shared by
        two models goes to the store of the model that runs).

        The first time, this store adopts it: `source` keeps a copy if one of its plans laid
        it out, and releases it otherwise (a layer's own store, a model never run). Later
        times only copy the value into this store's own copy, which stays where this store's
        plans read it: alternating models costs a copy of the shared weights, not new plans.
        """
        theirs, own = source.parameters[name], self.parameters.get(name)
        if own is None:
            self.adopt(source.release(name) if theirs.value is None
                       else source._detached_copy(name))
        elif theirs.value is None or own.value is None or theirs.user_desc != own.user_desc:
            self.set_value(name, source.get_value(name))
        elif theirs.value.desc == own.value.desc:
            np.copyto(own.value.as_array(), theirs.value.as_array())
        else:
            # each model's primitives chose a layout of their own (e.g. for another batch
            # size): through the Keras layout, as oneDNN reorders between two blocked
            # layouts far slower than into and out of a plain one (docs/performance.md,
            # 'Decisions and their measurements')
            staging = self._staging.get(name)
            if staging is None:
                staging = self._staging[name] = Memory(own.user_desc)
            reorder_now(theirs.value, staging)
            reorder_now(staging, own.value)

    def _detached_copy(self, name):
        """A new Parameter (not laid out) with `name`'s current value, flag and penalties."""
        parameter = self.parameters[name]
        copy = Parameter(name, parameter.dims, parameter.user_tag,
                         self.get_value(name).reshape(parameter.keras_shape),
                         parameter.trainable)
        copy.l1, copy.l2, copy.constraint = parameter.l1, parameter.l2, parameter.constraint
        copy.penalty = parameter.penalty
        return copy

    def adopt(self, parameter):
        if parameter.name in self.parameters:
            raise ValueError(f"parameter {parameter.name!r} already exists (two layers with "
                             "the same name in one model?)")
        self.parameters[parameter.name] = parameter
        self.stale = True

    def value_memory(self, name, desc):
        """The value's Memory; the first caller's `desc` becomes the stored layout."""
        parameter = self.parameters[name]
        if parameter.value is None:
            if desc.data_type != dnnl.f32:  # masters stay f32; a bf16 reader gets a reorder
                desc = parameter.user_desc
            parameter.value = Memory(desc)
            parameter.grad = Memory(desc)
            self._write(parameter, parameter.pending_value)
            parameter.pending_value = None
        return parameter.value

    def grad_memory(self, name):
        parameter = self.parameters[name]
        if parameter.grad is None:
            raise RuntimeError(f"gradient of {name!r} requested before its value was laid out")
        return parameter.grad

    def pack(self):
        """Move every laid-out value and gradient into two contiguous arenas (once)."""
        # trainable first: the optimizer updates the arena's first `trainable_size` floats
        laid_out = sorted((p for p in self.parameters.values() if p.value is not None),
                          key=lambda p: not p.trainable)
        # The Parameter objects, not their names: a weight that left for another model's
        # store and came back is a new Parameter under the same name, laid out outside the
        # arena (the optimizer would update the arena's stale copy of it)
        order = [(p, p.trainable) for p in laid_out]
        if self.values_arena is not None and order == self._packed_order:
            return
        offsets, total = [], 0
        self.trainable_size = 0
        for parameter in laid_out:
            if parameter.trainable:
                self.trainable_size = (total + parameter.value.desc.size) // 4
            offsets.append(total)
            total += -(-parameter.value.desc.size // ALIGNMENT) * ALIGNMENT
        values, grads = aligned_bytes(max(total, ALIGNMENT)), aligned_bytes(max(total, ALIGNMENT))
        for parameter, offset in zip(laid_out, offsets, strict=True):
            size = parameter.value.desc.size
            for memory, arena in ((parameter.value, values), (parameter.grad, grads)):
                arena[offset:offset + size] = memory.storage[:size]
                memory.move_to(arena[offset:offset + size])  # its views too
        self._packed_order = order
        self.values_arena = values.view(np.float32)
        self.grads_arena = grads.view(np.float32)
        self._trainable_segments = tuple(
            (p.name, offset // 4, (offset + p.value.desc.size) // 4)
            for p, offset in zip(laid_out, offsets, strict=True) if p.trainable)

    def trainable_segments(self):
        """((name, start, stop), ...): where each trainable parameter lies in the arenas, in
        floats (stop - start includes a blocked layout's zero padding). The same tuple object
        until the next repacking, so the optimizer can tell in O(1) that nothing moved."""
        return self._trainable_segments

    # -- Keras-layout access (edges) ---------------------------------------------------------
    def get_value(self, name):
        parameter = self.parameters[name]
        if parameter.value is None:
            return parameter.pending_value.copy()
        out = Memory(parameter.user_desc)
        reorder_now(parameter.value, out)
        return out.as_array().copy()

    def set_value(self, name, array):
        parameter = self.parameters[name]
        array = np.ascontiguousarray(array, dtype=np.float32)
        if array.size != int(np.prod(parameter.dims)):
            raise ValueError(f"parameter {name!r}: expected {int(np.prod(parameter.dims))} "
                             f"values, got array of shape {array.shape}")
        if parameter.value is None:
            parameter.pending_value = array.copy()
        else:
            self._write(parameter, array)

    def get_grad(self, name):
        """The last computed gradient in the Keras layout (for tests and diagnostics)."""
        parameter = self.parameters[name]
        out = Memory(parameter.user_desc)
        reorder_now(parameter.grad, out)
        return out.as_array().copy()

    @staticmethod
    def _write(parameter, array):
        source = Memory(parameter.user_desc)
        source.as_array()[:] = array.reshape(-1)
        reorder_now(source, parameter.value)
