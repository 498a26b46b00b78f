"""AlphaDropoutOp (`keras.layers.AlphaDropout`): while training, each element is kept with
probability 1 - rate and otherwise set to SELU's negative saturation value -alpha * scale, then
everything goes through the affine a * x + b that brings a SELU-normalized input (mean 0,
variance 1) back to mean 0 and variance 1:

    a = ((1 - rate) * (1 + rate * alpha_p ** 2)) ** -0.5,   b = -a * alpha_p * rate,
    alpha_p = -alpha * scale                                  (Keras 3's formula)

so a kept element becomes a * x + b and a dropped one the constant a * alpha_p + b; the gradient
is a for a kept element and 0 for a dropped one. The identity in inference plans.

oneDNN has no random numbers: one fused multi-threaded numba kernel draws the keep decision of
each element from a counter-based hash of its index and a per-step salt (as noise.py's
GaussianDropout) and writes the output in the same pass; the backward draws the same decisions
again from the same salt, so no mask is stored and nothing is allocated per step.
"""

import numpy as np

from .base import Op
from .dropout import _mix64, keep_threshold
from .noise import _check_f32, _counter, next_salt
from .numba_config import PARALLEL, njit, prange

# SELU's constants, as Keras's AlphaDropout spells them
SELU_ALPHA = 1.6732632423543772848170429916717
SELU_SCALE = 1.0507009873554804934193349852946


def affine_parameters(rate):
    """(a, b, alpha_p) of Keras's AlphaDropout for `rate` (in float64)."""
    alpha_p = -SELU_ALPHA * SELU_SCALE
    a = ((1 - rate) * (1 + rate * alpha_p ** 2)) ** -0.5
    return a, -a * alpha_p * rate, alpha_p


@njit(**PARALLEL)
def alpha_dropout_forward_kernel(x, y, a, b, dropped_value, threshold, salt):
    """y = a * x + b where the element is kept, else dropped_value (= a * alpha_p + b)."""
    s = salt[0]
    for i in prange(x.size):
        keep = (_mix64(np.uint64(i) ^ s) >> np.uint64(48)) >= threshold
        y[i] = a * x[i] + b if keep else dropped_value


@njit(**PARALLEL)
def alpha_dropout_backward_kernel(dy, dx, a, threshold, salt):
    """dx = a * dy where the forward kept the element, else 0 (the same draws, same salt)."""
    s = salt[0]
    for i in prange(dy.size):
        keep = (_mix64(np.uint64(i) ^ s) >> np.uint64(48)) >= threshold
        dx[i] = a * dy[i] if keep else np.float32(0.0)


class AlphaDropoutOp(Op):
    """Args: name, rate (fraction of inputs dropped, in [0, 1)), seed (int or None)."""

    def __init__(self, name, rate, seed=None):
        self.name, self.rate = name, float(rate)
        self.counter, self.salt = _counter(seed), np.zeros(1, np.uint64)

    def output_dims(self, input_dims):
        return tuple(input_dims)

    def forward(self, builder, x, need_input_grad=True):
        if not builder.training or self.rate == 0:
            return x, lambda output_grad: output_grad
        _check_f32(x, f"AlphaDropout '{self.name}'")
        desc = x.memory.desc
        a, b, alpha_p = affine_parameters(self.rate)
        a, b, dropped = np.float32(a), np.float32(b), np.float32(a * alpha_p + b)
        threshold = np.uint64(keep_threshold(self.rate))
        output = builder.allocate(desc)
        builder.add_forward(builder.kernel(next_salt, (self.counter, self.salt),
                                           f"{self.name} salt"))
        builder.add_forward(builder.memory_kernel(
            alpha_dropout_forward_kernel, (x.memory, output, a, b, dropped, threshold,
                                           self.salt), f"{self.name} forward"))

        def backward(output_grad):
            if not need_input_grad:
                return None
            grad = builder.reorder(output_grad, desc, f"{self.name} gradient", backward=True)
            input_grad = grad if builder.writable(grad) else builder.allocate(desc)
            builder.add_backward(builder.memory_kernel(
                alpha_dropout_backward_kernel, (grad, input_grad, a, threshold, self.salt),
                f"{self.name} backward"))
            return input_grad

        return x.with_memory(output), backward
