"""numba kernels of Conv2DChannelAffineOp (conv2d_channel_affine.py): its per-channel vectors,
forward and backward. Each touches C floats, or the kernel's weights once: never an
activation-sized tensor.
"""

import numpy as np

from .numba_config import SERIAL, njit

U = np.uint64  # unsigned indices: numba's negative-index wrap turns loads into gathers
F = np.float32


@njit(**SERIAL)
def affine_vectors(scale_out, bias_out, scale, shift, bias, write_scale, write_bias):
    """scale_out = scale (a (C,) copy of the (1, C, 1, 1) parameter, the layout oneDNN's
    reorder takes its scales in); bias_out = shift + bias * scale, the convolution's bias.
    An absent scale is ones, an absent shift or bias zeros."""
    for c in range(scale.size):
        s = scale[U(c)]
        if write_scale:
            scale_out[U(c)] = s
        if write_bias:
            bias_out[U(c)] = shift[U(c)] + bias[U(c)] * s


@njit(**SERIAL)
def affine_vector_grads(scale_grad, shift_grad, bias_grad, weights_grad, weights, bias_sum_grad,
                        scale, bias, per_channel):
    """From the gradients of the scaled weights W' = W * s (plain, `per_channel` floats per
    output channel, channel-major) and of the bias b' = t + b * s:
        scale_grad = sum(W'_grad * W) + b'_grad * b,   shift_grad = b'_grad,
        bias_grad = b'_grad * s.
    per_channel is 0 when the affine has no scale (its gradient is not computed)."""
    for c in range(scale.size):
        total = F(0.0)
        start = c * per_channel
        for k in range(per_channel):
            total += weights_grad[U(start + k)] * weights[U(start + k)]
        g = bias_sum_grad[U(c)]
        scale_grad[U(c)] = total + g * bias[U(c)]
        shift_grad[U(c)] = g
        bias_grad[U(c)] = g * scale[U(c)]
