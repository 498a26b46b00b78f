"""ArgReductionOp (keras.ops.argmax / argmin along a non-batch axis) as a numba kernel.

The input is read in its plain Keras-order layout, as an (outer, n, inner) view around the
Keras axis; the output keeps that axis as size 1 (the front end reshapes when Keras drops it)
and holds the index of the first largest (smallest) value as a float32, the activation type of
the plan (Keras returns int32: cast it back outside the model). Ties take the first index, as
numpy and JAX. An index has no gradient.
"""

import numpy as np

from ..binding import constants as dnnl
from .base import Op
from .numba_config import PARALLEL, njit, prange
from .reshape import keras_layout


@njit(**PARALLEL)
def arg_reduction_kernel(x, y, n, inner, smallest):
    """y[line] = the first index of the largest (smallest) value along each line of x's
    (outer, n, inner) view. NaN wins, as in numpy."""
    lines = x.size // n
    for line in prange(lines):
        base = (line // inner) * n * inner + line % inner
        best, chosen = x[base], 0
        for k in range(1, n):
            if best != best:
                break
            v = x[base + k * inner]
            if v != v or (v < best if smallest else v > best):
                best, chosen = v, k
        y[line] = np.float32(chosen)


class ArgReductionOp(Op):
    """Args: name, mode ('argmax' or 'argmin'), axis (the Keras axis, not 0 the batch)."""

    def __init__(self, name, mode, axis):
        if mode not in ("argmax", "argmin"):
            raise ValueError(f"ArgReduction '{name}': argument mode must be 'argmax' or "
                             f"'argmin', got {mode!r}")
        self.name, self.mode, self.axis = name, mode, int(axis)
        if self.axis < 1:
            raise ValueError(f"ArgReduction '{name}': argument axis must be a non-batch Keras "
                             f"axis (>= 1), got {axis!r}")

    def output_dims(self, input_dims):
        # ranks 2 and 3 only: there the logical dims are the Keras shape
        if len(input_dims) == 4 or self.axis >= len(input_dims):
            raise ValueError(f"ArgReduction '{self.name}': axis {self.axis} of dims "
                             f"{tuple(input_dims)} (a rank-2 or rank-3 tensor) is not supported")
        return tuple(1 if axis == self.axis else d for axis, d in enumerate(input_dims))

    def forward(self, builder, x, need_input_grad=True):
        if x.memory.desc.data_type != dnnl.f32:
            raise NotImplementedError(f"'{self.name}': keras.ops.{self.mode} runs as a float32 "
                                      "kernel; use the 'float32' policy for this layer")
        out_dims = self.output_dims(x.dims)
        plain = keras_layout(x.dims, x.data_format, x.flattened, dnnl.f32)
        source = builder.reorder(x.memory, plain, f"{self.name} input to plain layout")
        output = builder.allocate(keras_layout(out_dims, x.data_format, False, dnnl.f32))
        n = x.dims[self.axis]
        inner = int(np.prod(x.dims[self.axis + 1:], dtype=np.int64))
        builder.add_forward(builder.memory_kernel(
            arg_reduction_kernel, (source, output, n, inner, self.mode == "argmin"),
            f"{self.name} {self.mode}"))

        def backward(output_grad):
            return None  # an index has no gradient

        return x.with_memory(output), backward
