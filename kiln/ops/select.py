"""SelectOp: where(condition, x1, x2) with numpy broadcasting, the engine behind keras.ops.where.

Shape rule: numpy's over the logical dims of equal rank of the three operands ((N, C, H, W)
for 4D whatever the data format). The condition is true where it is non-zero (nan too, as
numpy's bool()): a comparison's 1.0 / 0.0 or any float tensor. Any operand but one tensor
may be a number (`constants`: {operand index: value}, a one-element buffer of the plan):
where(x > 0, x, 0.0). The tensor inputs are the operands that are not constants, in order.

Forward: one pass of broadcast_kernels.elementwise_kernel (oneDNN has no select), iterating
over the layout of a full-size tensor operand as it is (nhwc, nchw, blocked nChw8c), the
other operands read through their strides (0 on their broadcast axes).

Backward: x1 gets the output gradient where the condition holds, x2 where it does not (one
elementwise pass each), summed over their broadcast axes (broadcast_kernels.reduce_kernel);
the condition gets zeros (where is flat in it almost everywhere; Keras gives it none).
"""

import numpy as np

from ..binding import constants as dnnl
from ..binding.memory import Memory, MemoryDesc
from . import broadcast_kernels as kernels
from .base import Op
from .broadcast import broadcast_dims, plain_desc
from .merge import needed
from .numba_config import THREADS
from .tensor import Tensor

OPERANDS = ("condition", "x1", "x2")


class SelectOp(Op):
    """Args:
        name: the op's (layer's) name.
        constants: {operand index (0 condition, 1 x1, 2 x2): number} for the operands that
            are numbers; the others are the op's inputs, in order.
    """

    arity = None

    def __init__(self, name, constants=None):
        self.name = name
        self.constants = {int(k): float(v) for k, v in (constants or {}).items()}
        if any(k not in (0, 1, 2) for k in self.constants) or len(self.constants) > 2:
            raise ValueError(f"Select '{name}': argument constants must map at most two of the "
                             f"operand indices 0, 1, 2 to numbers, got {constants!r}")
        self.inputs = [i for i in range(3) if i not in self.constants]

    @property
    def label(self):
        return f"where '{self.name}'"

    def _all_dims(self, input_dims):
        if len(input_dims) != len(self.inputs):
            raise ValueError(f"{self.label}: takes {len(self.inputs)} inputs "
                             f"({', '.join(OPERANDS[i] for i in self.inputs)}), got "
                             f"{len(input_dims)}")
        rank = len(input_dims[0])
        dims = [None, None, None]
        for index, d in zip(self.inputs, input_dims, strict=True):
            dims[index] = tuple(d)
        for index in self.constants:
            dims[index] = (1,) * rank
        return dims

    def output_dims(self, input_dims):
        dims = self._all_dims(input_dims)
        return broadcast_dims(self.label, broadcast_dims(self.label, dims[0], dims[1]),
                              dims[2])

    def forward(self, builder, x, need_input_grad=None):
        inputs = list(x)
        out_dims = self.output_dims([t.dims for t in inputs])
        for tensor in inputs:
            if tensor.memory.desc.data_type != dnnl.f32:
                raise NotImplementedError(f"{self.label}: runs in float32 only; use the "
                                          "'float32' dtype policy for this layer")
        first = inputs[0]
        tensors = [None, None, None]
        for index, tensor in zip(self.inputs, inputs, strict=True):
            tensors[index] = tensor
        for index, value in self.constants.items():
            memory = Memory(MemoryDesc.with_tag((1,) * len(out_dims), dnnl.f32))
            memory.as_array()[:] = value  # the plan's own bytes, never pooled
            tensors[index] = Tensor(memory, first.data_format, first.flattened)
        plan = _Planned(self, builder, tensors, out_dims, first.data_format)
        output = Tensor(plan.output, first.data_format, first.flattened,
                        backward_reads_memory=False)
        need = needed(need_input_grad, len(self.inputs))
        return output, (lambda output_grad: plan.backward(output_grad, need))


class _Planned:
    """One application of a SelectOp in a plan: its operands as the forward kernel read them."""

    def __init__(self, op, builder, tensors, out_dims, data_format):
        self.op, self.builder, self.tensors = op, builder, tensors
        self.dims = [tuple(t.dims) for t in tensors]
        self.out_dims, self.data_format = out_dims, data_format
        self.full = [d == out_dims for d in self.dims]
        desc = self._iteration_desc()
        axes = kernels.physical_axes(desc)
        self.memories = []
        for index, tensor in enumerate(tensors):
            layout = desc if self.full[index] else tensor.memory.desc
            if kernels.operand_strides(axes, self.dims[index], layout) is None:
                layout = plain_desc(self.dims[index], data_format)
            self.memories.append(builder.reorder(tensor.memory, layout,
                                                 f"{op.name} {OPERANDS[index]} to layout"))
        self.output = builder.allocate(desc)
        builder.add_forward(self._elementwise(kernels.SELECT, self.output, *self.memories,
                                              f"{op.name} forward"))

    def _iteration_desc(self):
        """A full-size tensor input's layout when the kernels can walk it, else plain."""
        for index in (1, 2, 0):
            desc = self.tensors[index].memory.desc
            if index in self.op.inputs and self.full[index] and kernels.physical_axes(desc):
                return desc
        return plain_desc(self.out_dims, self.data_format)

    def _elementwise(self, code, out, x, y, z, label):
        axes = kernels.physical_axes(out.desc)
        strides = [kernels.operand_strides(axes, m.desc.dims, m.desc) for m in (out, x, y, z)]
        shape, strides = kernels.split_rows(*kernels.plan_axes(axes, strides))
        return self.builder.memory_kernel(kernels.elementwise_kernel, (
            np.int64(code), out, x, y, z, shape, strides), label)

    def backward(self, output_grad, need):
        builder, op = self.builder, self.op
        grads = [None, None, None]
        wanted = [False, False, False]
        for index, flag in zip(op.inputs, need, strict=True):
            wanted[index] = flag
        if wanted[1] or wanted[2]:
            grad = builder.reorder(output_grad, self.output.desc,
                                   f"{op.name} gradient to layout", backward=True)
        for index, code in ((1, kernels.SELECT_FIRST), (2, kernels.SELECT_SECOND)):
            if wanted[index]:
                grads[index] = self._operand_grad(index, code, grad)
        if wanted[0]:
            grads[0] = builder.allocate(self.tensors[0].memory.desc)
            builder.add_backward(builder.memory_kernel(
                kernels.zero_kernel, (grads[0],), f"{op.name} backward condition zeros"))
        return [grads[index] for index in op.inputs]

    def _operand_grad(self, index, code, grad):
        builder = self.builder
        label = f"{self.op.name} backward {OPERANDS[index]}"
        local = builder.allocate(grad.desc)
        builder.add_backward(self._elementwise(code, local, self.memories[0], grad, grad,
                                               label))
        if self.full[index]:
            return local
        dims = self.dims[index]
        axes = kernels.physical_axes(local.desc)
        desc = self.tensors[index].memory.desc
        if kernels.operand_strides(axes, dims, desc) is None:
            desc = plain_desc(dims, self.data_format)
        target = builder.allocate(desc)
        strides = [kernels.operand_strides(axes, dims, desc),
                   kernels.operand_strides(axes, self.out_dims, local.desc)]
        strides.append(strides[1])
        shape, strides = kernels.split_rows(*kernels.plan_axes(axes, strides))
        partials = np.zeros((THREADS, desc.size // 4), np.float32)
        builder.add_backward(builder.memory_kernel(kernels.reduce_kernel, (
            target, local, _EMPTY, np.float32(1.0), shape, strides, partials),
            f"{label} sum over broadcast axes"))
        return target


_EMPTY = np.zeros(0, np.float32)
