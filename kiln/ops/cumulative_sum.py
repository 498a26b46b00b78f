"""CumulativeSumOp (keras.ops.cumsum along a non-batch axis) as a fused numba kernel.

The input is read in its plain Keras-order layout (a reorder from a blocked one), so the Keras
axis is a (outer, n, inner) view of the flat buffer: each of the outer * inner lines is summed
in order by one thread, in float32 as JAX does. Backward is the same kernel run in reverse over
the output gradient: d/dx[i] of sum_j y[j] * dy[j] is the sum of dy[j] for j >= i.
"""

import numpy as np

from ..binding import constants as dnnl
from .base import Op
from .numba_config import PARALLEL, njit, prange
from .reshape import keras_layout
from .tensor import keras_shape


@njit(**PARALLEL)
def cumulative_sum_kernel(x, y, n, inner, reverse):
    """y = cumsum of x along the middle axis of its (outer, n, inner) view; from the end when
    `reverse`."""
    lines = x.size // n
    for line in prange(lines):
        base = (line // inner) * n * inner + line % inner
        total = np.float32(0.0)
        for k in range(n):
            i = base + ((n - 1 - k) if reverse else k) * inner
            total += x[i]
            y[i] = total


class CumulativeSumOp(Op):
    """Args: name, axis (the Keras axis of the input's shape, not 0 the batch)."""

    per_image = True

    def __init__(self, name, axis):
        self.name, self.axis = name, int(axis)
        if self.axis < 1:
            raise ValueError(f"CumulativeSum '{name}': argument axis must be a non-batch Keras "
                             f"axis (>= 1), got {axis!r}")

    def output_dims(self, input_dims):
        if self.axis >= len(input_dims):
            raise ValueError(f"CumulativeSum '{self.name}': axis {self.axis} is out of range "
                             f"for dims {tuple(input_dims)}")
        return tuple(input_dims)

    def forward(self, builder, x, need_input_grad=True):
        self.output_dims(x.dims)
        if x.memory.desc.data_type != dnnl.f32:
            raise NotImplementedError(f"'{self.name}': keras.ops.cumsum runs as a float32 "
                                      "kernel; use the 'float32' policy for this layer")
        plain = keras_layout(x.dims, x.data_format, x.flattened, dnnl.f32)
        source = builder.reorder(x.memory, plain, f"{self.name} input to plain layout")
        shape = keras_shape(x.dims, x.data_format, x.flattened)
        n, inner = shape[self.axis], int(np.prod(shape[self.axis + 1:], dtype=np.int64))
        output = builder.allocate(plain)
        builder.add_forward(builder.memory_kernel(
            cumulative_sum_kernel, (source, output, n, inner, False), f"{self.name} cumsum"))

        def backward(output_grad):
            if not need_input_grad:
                return None
            grad = builder.reorder(output_grad, plain, f"{self.name} gradient to plain",
                                   backward=True)
            input_grad = builder.allocate(plain)
            builder.add_backward(builder.memory_kernel(
                cumulative_sum_kernel, (grad, input_grad, n, inner, True),
                f"{self.name} cumsum backward"))
            return input_grad

        return x.with_memory(output), backward
