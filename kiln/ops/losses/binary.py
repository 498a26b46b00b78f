"""Binary cross-entropy (one or many independent labels per sample), as Keras 3 computes it.

Three ways in, as for the categorical loss:
    fused sigmoid   the model ends with a sigmoid the head applies itself: p = sigmoid(z),
                    loss -(y log(clip(p)) + (1 - y) log(1 - clip(p))), gradient p - y
    from_logits     -(y log_sigmoid(z) + (1 - y) log_sigmoid(-z)), gradient sigmoid(z) - y
    probabilities   any other output p, clipped to [eps, 1 - eps], differentiated exactly
Per sample the loss is the mean over the labels (Keras' mean over the last axis); label
smoothing squeezes y towards 0.5. The kernel also counts Keras' binary accuracy (output >
0.5 equals y) on the model's output, averaged over the labels of a sample.
"""

import numpy as np

from ..numba_config import SERIAL, njit
from .head import CORRECT, LOSS, LossHead

FUSED_SIGMOID, LOGITS, PROBABILITIES = 0, 1, 2


@njit(**SERIAL)
def _log_sigmoid(x):
    # -softplus(-x), stable for large |x|
    return -(max(-x, 0.0) + np.log1p(np.exp(-abs(x))))


@njit(**SERIAL)
def binary_crossentropy_kernel(x, labels, weights, outputs, grad, stats, epsilon, smoothing,
                               mode, scale, want_grad):
    n, k = x.shape
    total, correct = 0.0, 0.0
    keep, spread = 1.0 - smoothing, 0.5 * smoothing
    for row in range(n):
        row_loss, matches = 0.0, 0.0
        coefficient = weights[row] * scale / (n * k)
        for j in range(k):
            value = x[row, j]
            raw = labels[row, j]
            y = raw * keep + spread
            if mode == LOGITS:
                loss = -(y * _log_sigmoid(value) + (1.0 - y) * _log_sigmoid(-value))
                slope = 1.0 / (1.0 + np.exp(-value)) - y
                shown = value
            elif mode == FUSED_SIGMOID:
                p = 1.0 / (1.0 + np.exp(-value))
                outputs[row, j] = p
                clipped = min(max(p, epsilon), 1.0 - epsilon)
                loss = -(y * np.log(clipped) + (1.0 - y) * np.log(1.0 - clipped))
                slope = p - y
                shown = p
            else:
                clipped = min(max(value, epsilon), 1.0 - epsilon)
                loss = -(y * np.log(clipped) + (1.0 - y) * np.log(1.0 - clipped))
                slope = 0.0
                if epsilon < value < 1.0 - epsilon:
                    slope = (1.0 - y) / (1.0 - clipped) - y / clipped
                shown = value
            row_loss += loss
            matches += (1.0 if shown > 0.5 else 0.0) == raw
            if want_grad:
                grad[row, j] = slope * coefficient
        total += weights[row] * row_loss / k
        correct += matches / k
    stats[LOSS] = total / n
    stats[CORRECT] = correct


class BinaryCrossentropyHead(LossHead):
    """Args: name, from_logits, label_smoothing, epsilon (as Keras' BinaryCrossentropy)."""

    per_element = True

    fuses = "sigmoid"
    accuracy = "binary"

    def __init__(self, name, from_logits=False, label_smoothing=0.0, epsilon=1e-7):
        super().__init__(name, from_logits)
        self.label_smoothing = float(label_smoothing)
        self.epsilon = epsilon

    def plan(self, builder, x, labels, weights, scale, want_grad, fused):
        stats = self.stats()
        inputs_memory, inputs = self.plain(builder, x, self.name)
        grad_memory, grad = self.buffer(builder, inputs.shape)
        if fused:
            mode, (outputs_memory, outputs) = FUSED_SIGMOID, self.buffer(builder, inputs.shape)
        else:
            mode, outputs_memory, outputs = (LOGITS if self.from_logits else PROBABILITIES,
                                             inputs_memory, inputs)
        builder.keep(outputs_memory)
        builder.add_forward(builder.kernel(
            binary_crossentropy_kernel,
            (inputs, labels, weights, outputs, grad, stats, np.float32(self.epsilon),
             np.float32(self.label_smoothing), mode, np.float32(scale), want_grad),
            f"{self.name} binary cross-entropy"))
        return outputs, stats, (grad_memory if want_grad else None)
