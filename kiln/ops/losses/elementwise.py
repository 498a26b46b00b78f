"""Losses that compare the output with its target value by value: mse, mae, mape, msle,
Huber, log-cosh, hinge, squared hinge, Poisson (mean over the last axis) and KL divergence
(sum over it), with Keras 3's formulas, clips and epsilons.

One kernel serves them all: the per-value loss and its slope come from `element()`, picked by
an integer kind (a predictable branch inside the loop, cheaper than one kernel per loss to
compile and load). Hinge losses turn 0/1 labels into -1/1 when every label of the batch is
0 or 1, as Keras does per call.
"""

import math

import numpy as np

from ..numba_config import SERIAL, njit
from .head import LOSS, LossHead

(MSE, MAE, MAPE, MSLE, HUBER, LOG_COSH, HINGE, SQUARED_HINGE, POISSON,
 KL_DIVERGENCE) = range(10)
KINDS = {"mean_squared_error": MSE, "mean_absolute_error": MAE,
         "mean_absolute_percentage_error": MAPE, "mean_squared_logarithmic_error": MSLE,
         "huber": HUBER, "log_cosh": LOG_COSH, "hinge": HINGE, "squared_hinge": SQUARED_HINGE,
         "poisson": POISSON, "kl_divergence": KL_DIVERGENCE}
LOG2 = math.log(2.0)


@njit(**SERIAL)
def _sign(value):
    return 1.0 if value > 0 else (-1.0 if value < 0 else 0.0)


@njit(**SERIAL)
def element(kind, p, y, delta, epsilon):
    """(loss, d loss / d p) of one predicted value p against its target y."""
    if kind == MSE:
        d = p - y
        return d * d, 2.0 * d
    if kind == MAE:
        return abs(p - y), _sign(p - y)
    if kind == MAPE:
        scale = 100.0 / max(abs(y), epsilon)
        return abs(y - p) * scale, _sign(p - y) * scale
    if kind == MSLE:
        first = np.log(max(p, epsilon) + 1.0)
        d = first - np.log(max(y, epsilon) + 1.0)
        slope = 2.0 * d / (max(p, epsilon) + 1.0) if p > epsilon else 0.0
        return d * d, slope
    if kind == HUBER:
        d = p - y
        if abs(d) <= delta:
            return 0.5 * d * d, d
        return delta * abs(d) - 0.5 * delta * delta, delta * _sign(d)
    if kind == LOG_COSH:
        d = p - y
        t = -2.0 * d  # Keras: x + softplus(-2x) - log(2)
        softplus = max(t, 0.0) + np.log1p(np.exp(-abs(t)))
        return d + softplus - LOG2, np.tanh(d)
    if kind == HINGE:
        margin = 1.0 - y * p
        return (margin, -y) if margin > 0 else (0.0, 0.0)
    if kind == SQUARED_HINGE:
        margin = 1.0 - y * p
        return (margin * margin, -2.0 * margin * y) if margin > 0 else (0.0, 0.0)
    if kind == POISSON:
        return p - y * np.log(p + epsilon), 1.0 - y / (p + epsilon)
    # KL_DIVERGENCE: y and p clipped to [eps, 1]
    yc = min(max(y, epsilon), 1.0)
    pc = min(max(p, epsilon), 1.0)
    slope = -yc / pc if epsilon < p < 1.0 else 0.0
    return yc * np.log(yc / pc), slope


@njit(**SERIAL)
def elementwise_loss_kernel(predictions, labels, weights, grad, stats, kind, delta, epsilon,
                            scale, want_grad):
    n, k = predictions.shape
    to_signs = False
    if kind == HINGE or kind == SQUARED_HINGE:
        to_signs = True
        for row in range(n):
            for j in range(k):
                if labels[row, j] != 0.0 and labels[row, j] != 1.0:
                    to_signs = False
    per_sample = 1.0 if kind == KL_DIVERGENCE else float(k)  # KL sums, the others average
    total = 0.0
    for row in range(n):
        row_loss = 0.0
        coefficient = weights[row] * scale / (n * per_sample)
        for j in range(k):
            y = labels[row, j]
            if to_signs:
                y = 2.0 * y - 1.0
            loss, slope = element(kind, predictions[row, j], y, delta, epsilon)
            row_loss += loss
            if want_grad:
                grad[row, j] = slope * coefficient
        total += weights[row] * row_loss / per_sample
    stats[LOSS] = total / n


class ElementwiseLossHead(LossHead):
    """Args:
        name: the loss name (for messages).
        kind: a key of KINDS (Keras' function name).
        delta: Huber's delta.
        epsilon: Keras' backend epsilon.
    """

    @property
    def per_element(self):
        # KL divergence sums over the last axis (a distribution per row), not a mean
        return self.kind != "kl_divergence"

    def __init__(self, name, kind, delta=1.0, epsilon=1e-7):
        super().__init__(name)
        if kind not in KINDS:
            raise ValueError(f"loss '{name}': kind must be one of {sorted(KINDS)}, got {kind!r}")
        self.kind = kind
        self.delta = delta
        self.epsilon = epsilon

    def plan(self, builder, x, labels, weights, scale, want_grad, fused):
        stats = self.stats()
        outputs_memory, outputs = self.plain(builder, x, self.name)
        grad_memory, grad = self.buffer(builder, outputs.shape)
        builder.keep(outputs_memory)
        builder.add_forward(builder.kernel(
            elementwise_loss_kernel,
            (outputs, labels, weights, grad, stats, KINDS[self.kind], np.float32(self.delta),
             np.float32(self.epsilon), np.float32(scale), want_grad),
            f"{self.name} {self.kind}"))
        return outputs, stats, (grad_memory if want_grad else None)
