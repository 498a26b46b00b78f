"""Softmax + categorical cross-entropy, fused: from logits to loss, accuracy and d(loss)/d(logits).

For probabilities p = softmax(z) and targets y, d(mean loss)/dz = (p * sum(y) - y) / N, so the
softmax backward and the log never run as separate passes. oneDNN has no loss, so this is a
numba kernel over the (N, classes) plain buffer; the batch is small, one thread is enough.
The loss clips p to [eps, 1 - eps] exactly as Keras' categorical_crossentropy does.
"""

import numpy as np

from ..binding import constants as dnnl
from ..binding.memory import MemoryDesc
from .numba_config import SERIAL, njit


@njit(**SERIAL)
def softmax_cross_entropy_kernel(logits, labels, probabilities, logits_grad, stats, epsilon):
    """stats <- (mean loss, mean categorical accuracy); logits_grad <- mean-loss gradient."""
    n, k = logits.shape
    total_loss = 0.0
    correct = 0
    inv_n = np.float32(1.0 / n)
    for row in range(n):
        peak = logits[row, 0]
        for j in range(1, k):
            peak = max(peak, logits[row, j])
        norm = 0.0
        for j in range(k):
            e = np.exp(logits[row, j] - peak)
            probabilities[row, j] = e
            norm += e
        label_sum = 0.0
        best_p, best_y, arg_p, arg_y = -1.0, -1.0, 0, 0
        for j in range(k):
            p = probabilities[row, j] / norm
            probabilities[row, j] = p
            y = labels[row, j]
            label_sum += y
            total_loss -= y * np.log(min(max(p, epsilon), 1.0 - epsilon))
            if p > best_p:
                best_p, arg_p = p, j
            if y > best_y:
                best_y, arg_y = y, j
        for j in range(k):
            logits_grad[row, j] = (probabilities[row, j] * label_sum - labels[row, j]) * inv_n
        correct += arg_p == arg_y
    stats[0] = total_loss / n
    stats[1] = correct / n


class SoftmaxCrossEntropy:
    """The loss head of a plan: softmax probabilities, loss, accuracy and the logits gradient.

    Args:
        name: layer name of the softmax (for messages).
        epsilon: Keras' backend epsilon used to clip probabilities in the loss.
    """

    def __init__(self, name, epsilon=1e-7):
        self.name = name
        self.epsilon = epsilon

    def forward(self, builder, logits, labels):
        """Plan the loss on `logits` (a Tensor of dims (N, classes)) and `labels` (a float32
        numpy array (N, classes) the plan fills each step). Returns (probabilities Memory,
        stats array, backward) where backward() returns the logits gradient Memory."""
        plain = MemoryDesc.with_tag(logits.dims, dnnl.f32, dnnl.ab)
        logits_plain = builder.reorder(logits.memory, plain, f"{self.name} logits")
        probabilities = builder.allocate(plain)
        logits_grad = builder.allocate(plain)
        stats = np.zeros(2, dtype=np.float64)
        shape = logits.dims
        builder.add_forward(builder.kernel(
            softmax_cross_entropy_kernel,
            (logits_plain.as_array().reshape(shape), labels,
             probabilities.as_array().reshape(shape), logits_grad.as_array().reshape(shape),
             stats, np.float32(self.epsilon)),
            f"{self.name} softmax cross-entropy"))
        return probabilities, stats, lambda: logits_grad
