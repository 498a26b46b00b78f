"""numba kernels for the activations oneDNN's eltwise has no algorithm for.

Every kernel is element-wise over a flat float32 buffer, so it runs on a tensor in whatever
layout (plain or blocked) it has, like oneDNN's eltwise. Forward kernels take (x, y, a, b, c);
backward kernels take (saved, dy, dx, a, b, c), where `saved` is the activation's output for
the `*_dst` kernels (so they can back an activation fused into a conv or dense forward) and
its input for the `*_src` ones. dx may be dy (in place). a, b, c are the activation's float
parameters; unused ones are 0.
"""

import numpy as np

from .numba_config import PARALLEL, njit, prange

SELU_ALPHA = 1.6732632423543772848170429916717
SELU_SCALE = 1.0507009873554804934193349852946


@njit(**PARALLEL)
def relu_general_forward(x, y, negative_slope, max_value, threshold):
    """Keras's relu(x, negative_slope, max_value, threshold) in its own order of steps:
    x where x > threshold (else 0), clipped to [0, max_value] when max_value >= 0 (a negative
    max_value stands for None), minus negative_slope * relu(threshold - x)."""
    for i in prange(x.size):
        v = x[i]
        out = v if v > threshold else np.float32(0.0)
        if max_value >= 0:
            out = min(max(out, np.float32(0.0)), max_value)
        if v < threshold:
            out -= negative_slope * (threshold - v)
        y[i] = out


@njit(**PARALLEL)
def relu_general_backward_src(x, dy, dx, negative_slope, max_value, threshold):
    for i in prange(x.size):
        v = x[i]
        slope = np.float32(0.0)
        if v > threshold and (max_value < 0 or (v > 0 and v < max_value)):
            slope = np.float32(1.0)
        elif v < threshold:
            slope = negative_slope
        dx[i] = dy[i] * slope


@njit(**PARALLEL)
def selu_forward(x, y, a, b, c):
    for i in prange(x.size):
        v = x[i]
        if v > 0:
            y[i] = np.float32(SELU_SCALE) * v
        else:
            y[i] = np.float32(SELU_SCALE * SELU_ALPHA) * np.expm1(v)


@njit(**PARALLEL)
def selu_backward_dst(y, dy, dx, a, b, c):
    """selu'(x) = scale for x > 0, else scale * alpha * exp(x) = y + scale * alpha."""
    for i in prange(y.size):
        v = y[i]
        if v > 0:
            dx[i] = dy[i] * np.float32(SELU_SCALE)
        else:
            dx[i] = dy[i] * (v + np.float32(SELU_SCALE * SELU_ALPHA))


@njit(**PARALLEL)
def softsign_forward(x, y, a, b, c):
    for i in prange(x.size):
        y[i] = x[i] / (np.float32(1.0) + abs(x[i]))


@njit(**PARALLEL)
def softsign_backward_dst(y, dy, dx, a, b, c):
    """softsign'(x) = 1 / (1 + |x|)^2 = (1 - |y|)^2."""
    for i in prange(y.size):
        r = np.float32(1.0) - abs(y[i])
        dx[i] = dy[i] * r * r


@njit(**PARALLEL)
def hard_sigmoid_backward_dst(y, dy, dx, slope, b, c):
    """relu6(x + 3) / 6 has slope 1/6 where its output is strictly between 0 and 1."""
    for i in prange(y.size):
        v = y[i]
        dx[i] = dy[i] * slope if v > 0 and v < 1 else np.float32(0.0)


@njit(**PARALLEL)
def softplus_backward_dst(y, dy, dx, a, b, c):
    """softplus'(x) = sigmoid(x) = 1 - exp(-y), as -expm1(-y) to keep small y exact."""
    for i in prange(y.size):
        dx[i] = -dy[i] * np.expm1(-y[i])
