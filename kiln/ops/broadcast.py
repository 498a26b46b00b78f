"""BroadcastBinaryOp: x0 (op) x1 with numpy broadcasting, the engine behind keras.ops.add,
subtract, multiply, divide, maximum, minimum and power (and a custom layer's learned scale or
bias), and the comparisons equal, not_equal, greater, greater_equal, less, less_equal (float32
1.0 / 0.0, the way Keras's bool result is used in arithmetic; their gradient is 0 to both
inputs, as a step function's almost everywhere).

Shape rule: numpy's, over logical dims of equal rank ((N, C, H, W) for 4D whatever the data
format): axes of size 1 broadcast. The second operand is either a tensor (arity None: two
inputs), a trainable parameter the op owns (arity 1; `operand` = (short name, logical dims
with 1 on the broadcast axes, tag of its Keras layout)), a number (arity 1; `constant`:
a one-element buffer of the plan, x > 0), or a constant array (arity 1; `constant_array`:
a buffer of the plan holding its values, on either side: (x - MEAN) / STD, 1 - x).

Forward: one oneDNN binary call with the full-size operand as src0 in its own layout (blocked
from a conv or plain) and the other as src1 in the layout the primitive picks for it (so a
per-channel bias onto nChw8c is read as 8-lane blocks too); swapped for commutative ops when
x0 is the broadcast one (subtract swaps with a fused `* -1`). oneDNN 3.2 has only its
reference kernel, far slower, for many broadcast patterns (docs/performance.md, 'Decisions and
their measurements'), and none for both operands broadcasting: those run
broadcast_kernels.elementwise_kernel, on the layout as it is.
A per-channel parameter added to or multiplying nhwc or nchw data (a custom layer's bias or
scale after a conv) runs ChannelAffineOp's numba forward instead, measured faster than the
binary's jit kernel on those layouts (channel_affine.plain_4d), a large output written with
streaming stores.

Backward: the gradient of an operand is the output gradient times the local derivative
(1 for add, -1, the other operand, 1 / x1, -x0 / x1**2, the max / min share, the power
rule's x1 * x0**(x1 - 1) and log(x0) * x0**x1; power has no oneDNN binary algorithm and runs
the numba kernel both ways), summed over the
axes where that operand was broadcast. A full-size input of add gets the output gradient
buffer itself (no copy). The sum is broadcast_kernels.reduce_kernel, with multiply's factor
fused into it, because oneDNN 3.2's reduction runs its reference kernel for the per-channel
sum of nhwc and blocked layouts (see broadcast_kernels.py).
"""

import numpy as np

from ..binding import constants as dnnl
from ..binding.memory import Memory, MemoryDesc
from ..binding.post_ops import NONE, negate
from . import broadcast_kernels as kernels
from . import gate_gradient
from .base import Op
from .broadcast_gradients import PlannedGradients
from .broadcast_rules import (  # noqa: F401 (re-exported: ops and tests import them here)
    ALGORITHMS,
    COMPARISONS,
    MIRRORED,
    OPERATIONS,
    SWAPPABLE,
    binary_primitive,
    broadcast_dims,
    plain_desc,
)
from .channel_affine import kernel_iteration, per_channel, plain_4d
from .channel_affine_kernels import forward_kernel as affine_forward_kernel
from .layout_preference import prefer
from .merge import needed
from .tensor import Tensor


class BroadcastBinaryOp(Op):
    """Args:
        name: the op's (layer's) name.
        operation: one of OPERATIONS.
        operand: None (two input tensors, x[0] (op) x[1]), or (short name, logical dims,
            Keras tag) of a trainable parameter: x (op) parameter, the parameter named
            "<name>/<short name>".
        constant: None, or a number: x (op) constant (operand must be None).
        constant_array: None, or (float32 values, logical dims, Keras tag) of an array the
            plan holds (no gradient): x (op) array, or array (op) x with `constant_first`.
    """

    def __init__(self, name, operation, operand=None, constant=None, constant_array=None,
                 constant_first=False):
        if operation not in OPERATIONS:
            raise ValueError(f"BroadcastBinary '{name}': argument operation must be one of "
                             f"{list(OPERATIONS)}, got {operation!r}")
        if sum(x is not None for x in (operand, constant, constant_array)) > 1:
            raise ValueError(f"BroadcastBinary '{name}': takes one of operand, constant and "
                             "constant_array")
        self.name = name
        self.operation = operation
        self.operand = None
        self.constant = None if constant is None else float(constant)
        if operand is not None:
            short, dims, tag = operand
            self.operand = (str(short), tuple(int(d) for d in dims), tag)
        self.constant_array, self.constant_first = None, bool(constant_first)
        if constant_array is not None:
            values, dims, tag = constant_array
            dims = tuple(int(d) for d in dims)
            values = np.ascontiguousarray(values, dtype=np.float32)
            if values.size != int(np.prod(dims)):
                raise ValueError(f"BroadcastBinary '{name}': a constant of {values.size} "
                                 f"values does not fill logical dims {dims}")
            self.constant_array = (values, dims, tag)
        self.arity = (None if operand is None and constant is None and constant_array is None
                      else 1)
        # With an operand of batch 1 (the same for every image) the op treats each image
        # alone, but it has never been planned in sub-batches (nor tested so): see Op.per_image
        self.per_image = False

    @property
    def label(self):
        return f"{self.operation} '{self.name}'"

    @property
    def parameter_name(self):
        return f"{self.name}/{self.operand[0]}"

    def parameter_dims(self, input_dims):
        if self.operand is None:
            return {}
        short, dims, tag = self.operand
        return {short: (dims, tag)}

    def output_dims(self, input_dims):
        if self.constant is not None:
            return tuple(input_dims)
        if self.operand is not None:
            return broadcast_dims(self.label, input_dims, self.operand[1])
        if self.constant_array is not None:
            return broadcast_dims(self.label, input_dims, self.constant_array[1])
        if len(input_dims) != 2:
            raise ValueError(f"{self.label}: takes exactly 2 inputs, got {len(input_dims)}")
        return broadcast_dims(self.label, *input_dims)

    # -- forward --------------------------------------------------------------------------
    def forward(self, builder, x, need_input_grad=None):
        if self.arity is None:
            tensors = list(x)
            self.output_dims([t.dims for t in tensors])
            need = needed(need_input_grad, 2)
            dims = [tuple(t.dims) for t in tensors]
        elif self.constant is not None:
            ones = (1,) * len(x.dims)
            value = Memory(MemoryDesc.with_tag(ones, dnnl.f32))  # the plan's, never pooled
            value.as_array()[:] = self.constant
            tensors = [x, Tensor(value, x.data_format, x.flattened)]
            need = [need_input_grad is not False, False]
            dims = [tuple(x.dims), ones]
        elif self.constant_array is not None:
            values, constant_dims, tag = self.constant_array
            value = Memory(MemoryDesc.with_tag(constant_dims, dnnl.f32, tag))  # the plan's
            value.as_array()[:] = values.reshape(-1)
            tensors = [x, Tensor(value, x.data_format, x.flattened)]
            need = [need_input_grad is not False, False]
            dims = [tuple(x.dims), constant_dims]
            if self.constant_first:
                tensors, need, dims = tensors[::-1], need[::-1], dims[::-1]
        else:
            tensors = [x]
            need = [need_input_grad is not False, builder.wants_grad(self.parameter_name)]
            dims = [tuple(x.dims), self.operand[1]]
        types = {tensor.memory.desc.data_type for tensor in tensors}
        if not types <= {dnnl.f32, dnnl.bf16}:
            raise NotImplementedError(f"{self.label}: runs in float32 or bfloat16 only")
        out_dims = broadcast_dims(self.label, *dims)
        data_format = tensors[0].data_format
        plan = _Planned(self, builder, tensors, dims, out_dims, data_format)
        plan.forward()
        result = plan.output
        if dnnl.bf16 in types and result.desc.data_type != dnnl.bf16:
            result = builder.reorder(result, plain_desc(out_dims, data_format, dnnl.bf16),
                                     f"{self.name} output to bfloat16")
        output = Tensor(result, data_format, tensors[0].flattened,
                        backward_reads_memory=False)
        if dnnl.bf16 not in types:
            return output, (lambda output_grad: plan.backward(output_grad, need))
        big = plan.big
        if self.arity is None and big is not None and gate_gradient.applies(
                tensors[big].memory.desc, dims[1 - big], self.operation):
            def gate_backward(output_grad):
                """A squeeze-and-excitation product in bf16 (gate_gradient.py)."""
                grads = [None, None]
                grads[big], grads[1 - big] = gate_gradient.plan_backward(
                    builder, self.name, plan.primitive, plan.memories[big],
                    plan.memories[1 - big], output_grad, (need[big], need[1 - big]))
                grads[1 - big] = self._narrowed(builder, grads[1 - big], tensors[1 - big])
                return grads

            return output, gate_backward

        def backward(output_grad):
            """bf16 operands: the float32 backward on widened copies (its reorders to plain
            float32), each gradient narrowed back to its operand's layout and type."""
            grads = plan.backward(output_grad, need)
            many = isinstance(grads, list)
            sources = tensors if many else [x]
            grads = [self._narrowed(builder, grad, tensor) for grad, tensor in
                     zip(grads if many else [grads], sources, strict=True)]
            return grads if many else grads[0]

        return output, backward

    def _narrowed(self, builder, grad, tensor):
        """An operand's gradient in the operand's layout when that is bf16 (else as is)."""
        if grad is None or tensor.memory.desc.data_type != dnnl.bf16 \
                or grad.desc.data_type == dnnl.bf16:
            return grad
        return builder.reorder(grad, tensor.memory.desc, f"{self.name} gradient to bfloat16",
                               backward=True)


class _Planned(PlannedGradients):
    """One application of a BroadcastBinaryOp in a plan: its operands as planned, for backward.

    memories[i]: operand i as the forward call reads it (full-size operands in the output's
    layout, broadcast ones in the layout the binary primitive picked, or plain)."""

    def __init__(self, op, builder, tensors, dims, out_dims, data_format):
        self.op, self.builder = op, builder
        self.tensors, self.dims, self.out_dims = tensors, dims, out_dims
        self.data_format = data_format
        self.full = [d == out_dims for d in dims]
        self.memories = [None, None]
        self.output = None
        self.big = self.primitive = None  # the full-size operand and oneDNN's call, if any

    def operand_memory(self, index, desc):
        """Operand `index` in layout desc (a reorder if needed; the parameter via param())."""
        if index == 1 and self.op.operand is not None:
            return self.builder.param(self.op.parameter_name, desc)
        return self.builder.reorder(self.tensors[index].memory, desc,
                                    f"{self.op.name} input {index} to layout")

    def source_desc(self, index):
        if index == 1 and self.op.operand is not None:
            return None  # a parameter: wherever the primitive wants it
        return self.tensors[index].memory.desc

    def forward(self):
        op, builder = self.op, self.builder
        label = f"{op.name} forward"
        big = 0 if self.full[0] and self.source_desc(0) is not None else None
        if big is None and self.full[1] and self.source_desc(1) is not None \
                and op.operation in SWAPPABLE:
            big = 1
        if big == 0 and self._forward_per_channel(label):
            return
        if big is not None and op.operation in ALGORITHMS \
                and self._forward_onednn(big, label):
            return
        desc = self._iteration_desc()
        self.memories = [self.operand_memory(i, self._layout_for(i, desc)) for i in (0, 1)]
        self.output = builder.allocate(desc)
        self._elementwise(kernels.CODES[op.operation], self.output, self.memories[0],
                          self.memories[1], None, label, backward=False)

    def _forward_per_channel(self, label):
        """x + or * a per-channel parameter on nhwc or nchw data: ChannelAffineOp's numba forward
        (faster than oneDNN's binary there, see channel_affine.plain_4d), the
        parameter read in its Keras layout and a plan-owned 0 or 1 for the other side."""
        op, builder = self.op, self.builder
        desc = self.source_desc(0)
        if op.operand is None or op.operation not in ("add", "multiply") \
                or not per_channel(op.operand[1]) or not plain_4d(desc):
            return False
        parameter_desc = MemoryDesc.with_tag(op.operand[1], dnnl.f32, op.operand[2])
        parameter = self.operand_memory(1, parameter_desc)
        neutral = Memory(parameter_desc)  # the plan's own, never pooled
        neutral.as_array()[:] = 0.0 if op.operation == "multiply" else 1.0
        scale, shift = (neutral, parameter) if op.operation == "add" else (parameter, neutral)
        self.memories = [self.tensors[0].memory, parameter]
        self.output = builder.allocate(desc)
        shape, strides = kernel_iteration(desc, parameter_desc)
        builder.add_forward(builder.memory_kernel(affine_forward_kernel, (
            self.output, self.memories[0], scale, shift, False, shape, strides), label))
        return True

    def _forward_onednn(self, big, label):
        """src0 = the full-size operand `big`; False when oneDNN has only its ref kernel."""
        op, builder = self.op, self.builder
        small = 1 - big
        desc = self.source_desc(big)
        swapped_subtract = big == 1 and op.operation == "subtract"
        post = negate() if swapped_subtract else NONE
        operation = MIRRORED.get(op.operation, op.operation) if big == 1 else op.operation
        # a broadcast operand goes where the primitive wants it (8-lane blocks for nChw8c)
        small_desc = desc if self.full[small] else MemoryDesc.any(self.dims[small])
        primitive = prefer(lambda: binary_primitive(builder, operation, desc, small_desc, post,
                                                    op.label))
        if primitive is None:
            return False
        self.big, self.primitive = big, primitive
        self.memories[big] = self.tensors[big].memory
        self.memories[small] = self.operand_memory(small,
                                                   primitive.pd.md(dnnl.query_src_md, 1))
        self.output = builder.allocate(desc)
        builder.add_forward(builder.bind(primitive, {
            dnnl.ARG_SRC: self.memories[big], dnnl.ARG_SRC_1: self.memories[small],
            dnnl.ARG_DST: self.output}, label))
        return True

    def _iteration_desc(self):
        """The output layout of the numba path: a full-size input's, when walkable."""
        for index in (0, 1):
            desc = self.source_desc(index)
            if self.full[index] and desc is not None and kernels.physical_axes(desc):
                return desc
        return plain_desc(self.out_dims, self.data_format)

    def _layout_for(self, index, desc):
        """Where operand `index` is read from by a kernel iterating over layout `desc`."""
        if self.full[index]:
            return desc
        source = self.source_desc(index)
        axes = kernels.physical_axes(desc)
        if source is not None and kernels.operand_strides(axes, self.dims[index],
                                                          source) is not None:
            return source
        return plain_desc(self.dims[index], self.data_format)

    def _elementwise(self, code, out, x, y, z, label, backward):
        """out = f(x, y, z) by elementwise_kernel, iterating over out's (full-size) layout."""
        axes = kernels.physical_axes(out.desc)
        strides = [kernels.operand_strides(axes, memory.desc.dims, memory.desc)
                   for memory in (out, x, y, z if z is not None else x)]
        if z is None:
            strides[3] = [0] * len(axes)
        shape, strides = kernels.split_rows(*kernels.plan_axes(axes, strides))
        call = self.builder.memory_kernel(kernels.elementwise_kernel, (
            np.int64(code), out, x, y, z if z is not None else x, shape, strides), label)
        (self.builder.add_backward if backward else self.builder.add_forward)(call)
