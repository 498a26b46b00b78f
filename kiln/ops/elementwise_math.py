"""Element-wise math oneDNN's eltwise has no algorithm for (keras.ops.sin, cos, erf, round),
as fused numba kernels over the flat float32 buffer: element-wise, so a tensor runs in
whatever layout (plain or blocked) it has. Backward reads the saved input:

    sin    cos(x)                     cos    -sin(x)
    erf    2 / sqrt(pi) * exp(-x*x)   round  0 (piecewise constant, as JAX's gradient)

round rounds half to even, as numpy and Keras 3.
"""

import math

import numpy as np

from ..binding import constants as dnnl
from .base import Op
from .numba_config import PARALLEL, njit, prange

TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)


@njit(**PARALLEL)
def sin_forward(x, y):
    for i in prange(x.size):
        y[i] = math.sin(x[i])


@njit(**PARALLEL)
def sin_backward(x, dy, dx):
    for i in prange(x.size):
        dx[i] = dy[i] * math.cos(x[i])


@njit(**PARALLEL)
def cos_forward(x, y):
    for i in prange(x.size):
        y[i] = math.cos(x[i])


@njit(**PARALLEL)
def cos_backward(x, dy, dx):
    for i in prange(x.size):
        dx[i] = -dy[i] * math.sin(x[i])


@njit(**PARALLEL)
def erf_forward(x, y):
    for i in prange(x.size):
        y[i] = math.erf(x[i])


@njit(**PARALLEL)
def erf_backward(x, dy, dx):
    for i in prange(x.size):
        v = x[i]
        dx[i] = dy[i] * np.float32(TWO_OVER_SQRT_PI) * math.exp(-v * v)


@njit(**PARALLEL)
def round_forward(x, y):
    for i in prange(x.size):
        y[i] = np.rint(x[i])


# function -> (forward kernel (x, y), backward kernel (x, dy, dx), or None: zero gradient)
KERNELS = {"sin": (sin_forward, sin_backward), "cos": (cos_forward, cos_backward),
           "erf": (erf_forward, erf_backward), "round": (round_forward, None)}


class ElementwiseMathOp(Op):
    """Args: name, function (a key of KERNELS)."""

    per_image = True

    def __init__(self, name, function):
        if function not in KERNELS:
            raise ValueError(f"ElementwiseMath '{name}': argument function must be one of "
                             f"{sorted(KERNELS)}, got {function!r}")
        self.name, self.function = name, function

    def output_dims(self, input_dims):
        return tuple(input_dims)

    def forward(self, builder, x, need_input_grad=True):
        desc = x.memory.desc
        if desc.data_type != dnnl.f32:
            raise NotImplementedError(f"'{self.name}': keras.ops.{self.function} runs as a "
                                      "float32 kernel; use the 'float32' policy for this layer")
        forward_kernel, backward_kernel = KERNELS[self.function]
        output = builder.allocate(desc)
        builder.add_forward(builder.memory_kernel(forward_kernel, (x.memory, output),
                                                  f"{self.name} {self.function}"))
        source = x.memory

        def backward(output_grad):
            if not need_input_grad:
                return None
            grad = builder.reorder(output_grad, desc, f"{self.name} gradient", backward=True)
            input_grad = grad if builder.writable(grad) else builder.allocate(desc)
            if backward_kernel is None:
                builder.add_backward(builder.memory_kernel(
                    zero_kernel, (input_grad,), f"{self.name} {self.function} backward"))
            else:
                builder.add_backward(builder.memory_kernel(
                    backward_kernel, (source, grad, input_grad),
                    f"{self.name} {self.function} backward"))
            return input_grad

        return x.with_memory(output), backward


@njit(**PARALLEL)
def zero_kernel(dx):
    for i in prange(dx.size):
        dx[i] = np.float32(0.0)
