"""BroadcastBinaryOp's backward (broadcast.py): an operand's gradient is the output gradient
times the operation's local derivative, summed over the axes where the operand was broadcast
(broadcast_kernels.reduce_kernel, the factor fused into it); a comparison's is zero."""

import numpy as np

from ..binding import constants as dnnl
from ..binding.post_ops import NONE
from . import broadcast_kernels as kernels
from .broadcast_rules import COMPARISONS, EMPTY, binary_primitive, plain_desc
from .layout_preference import prefer
from .merge import linear
from .numba_config import THREADS


class PlannedGradients:
    """The backward half of broadcast._Planned (a mixin: it reads the forward's operands)."""

    def backward(self, output_grad, need):
        builder, op = self.builder, self.op
        wanted = [need[0], need[1]]
        if not any(wanted):
            return None if op.arity == 1 else [None, None]
        grads = [None, None]
        grad = output_grad
        if op.operation in COMPARISONS:
            grads = [self._zero_grad(i) if wanted[i] else None for i in (0, 1)]
            return grads[op.constant_first] if op.arity == 1 else grads
        if op.operation not in ("add", "subtract") or kernels.physical_axes(grad.desc) is None:
            # the local derivatives read the operands: the gradient joins their layout
            grad = builder.reorder(output_grad, self._work_desc(),
                                   f"{op.name} gradient to layout", backward=True)
            self._walkable_operands(grad.desc)
        for index in (0, 1):
            if wanted[index]:
                grads[index] = self._input_grad(index, grad)
        if grads[0] is not None and grads[0] is grads[1]:
            builder.share(grads[0])
        if op.arity == 1:  # the input's: after a constant array when that comes first
            return grads[op.constant_first]
        return grads

    def _zero_grad(self, index):
        """A comparison's gradient: zeros in the operand's layout (or the parameter's)."""
        builder, op = self.builder, self.op
        if op.operand is not None and index == 1:
            target = builder.param_grad(op.parameter_name, self.memories[1].desc)
        else:
            target = builder.allocate(self.tensors[index].memory.desc)
        builder.add_backward(builder.memory_kernel(kernels.zero_kernel, (target,),
                                                   f"{op.name} backward {index} zeros"))
        return target

    def _work_desc(self):
        """The backward's full-size layout: the output's, or plain if it has padding."""
        desc = self.output.desc
        return desc if kernels.physical_axes(desc) else plain_desc(self.out_dims,
                                                                   self.data_format)

    def _walkable_operands(self, desc):
        """Reorder (in backward) the operands a kernel over `desc` cannot walk as they are."""
        axes = kernels.physical_axes(desc)
        for index, memory in enumerate(self.memories):
            layout = desc if self.full[index] else memory.desc
            if kernels.operand_strides(axes, self.dims[index], layout) is None:
                layout = plain_desc(self.dims[index], self.data_format)
            self.memories[index] = self.builder.reorder(
                memory, layout, f"{self.op.name} input {index} to layout", backward=True)

    def _input_grad(self, index, grad):
        op, builder = self.op, self.builder
        operation = op.operation
        label = f"{op.name} backward {index}"
        other = self.memories[1 - index]
        scale = -1.0 if operation == "subtract" and index == 1 else 1.0
        factor = None  # a full-size array the reduction multiplies by (multiply's other side)
        if operation in ("add", "subtract"):
            local = grad
        elif operation == "multiply" and not self.full[index] and self.full[1 - index] \
                and other.desc == grad.desc:
            local, factor = grad, other
        else:
            local = self._local_derivative(index, grad, label)
        if self.full[index]:
            if scale == -1.0:
                return linear(builder, local, -1.0, f"{label} negate")
            return local
        return self._reduce(index, local, factor, scale, label)

    def _local_derivative(self, index, grad, label):
        """A new full-size buffer: the output gradient times d output / d operand `index`."""
        operation = self.op.operation
        x0, x1 = self.memories
        target = self.builder.allocate(grad.desc)
        if operation == "multiply":
            self._times(kernels.MULTIPLY, target, grad, x1 if index == 0 else x0, label)
        elif operation == "divide" and index == 0:
            self._times(kernels.DIVIDE, target, grad, x1, label)
        elif operation == "divide":
            self._elementwise(kernels.DIVIDE_GRAD_DIVISOR, target, x0, x1, grad, label,
                              backward=True)
        elif operation == "power":
            code = kernels.POWER_GRAD_BASE if index == 0 else kernels.POWER_GRAD_EXPONENT
            self._elementwise(code, target, x0, x1, grad, label, backward=True)
        else:  # maximum / minimum: the share of this input, ties split in half (as JAX)
            first, second = (x0, x1) if operation == "maximum" else (x1, x0)
            code = kernels.EXTREME_SHARE_FIRST if index == 0 else kernels.EXTREME_SHARE_SECOND
            self._elementwise(code, target, first, second, grad, label, backward=True)
        return target

    def _times(self, code, target, grad, other, label):
        """target = grad * other (or / other) in backward: a oneDNN binary call where oneDNN
        has a jit kernel for other's broadcast (a per-channel scale's dx = dy * scale), else
        elementwise_kernel."""
        operation = "multiply" if code == kernels.MULTIPLY else "divide"
        primitive = prefer(lambda: binary_primitive(self.builder, operation, grad.desc,
                                                    other.desc, NONE, self.op.label))
        if primitive is None:
            self._elementwise(code, target, grad, other, None, label, backward=True)
            return
        self.builder.add_backward(self.builder.bind(primitive, {
            dnnl.ARG_SRC: grad, dnnl.ARG_SRC_1: other, dnnl.ARG_DST: target}, label))

    def _reduce(self, index, source, factor, scale, label):
        """The sum of source (times factor) over operand `index`'s broadcast axes."""
        builder, op = self.builder, self.op
        dims = self.dims[index]
        axes = kernels.physical_axes(source.desc)
        if op.operand is not None and index == 1:
            name = op.parameter_name
            desc = self.memories[1].desc
            if kernels.operand_strides(axes, dims, desc) is None:
                desc = plain_desc(dims, self.data_format)
            target = builder.param_grad(name, desc)
        else:
            desc = self.tensors[index].memory.desc
            if kernels.operand_strides(axes, dims, desc) is None:
                desc = plain_desc(dims, self.data_format)
            target = builder.allocate(desc)
        strides = [kernels.operand_strides(axes, dims, target.desc),
                   kernels.operand_strides(axes, self.out_dims, source.desc)]
        strides.append(strides[1])
        shape, strides = kernels.split_rows(*kernels.plan_axes(axes, strides))
        partials = np.zeros((THREADS, target.desc.size // 4), np.float32)
        builder.add_backward(builder.memory_kernel(kernels.reduce_kernel, (
            target, source, factor if factor is not None else EMPTY, np.float32(scale),
            shape, strides, partials), f"{label} sum over broadcast axes"))
        return target
