"""Cosine similarity loss, as Keras 3: -sum(l2_normalize(y) * l2_normalize(p)) per sample,
where l2_normalize(x) = x * min(rsqrt(sum(x^2)), 1 / eps)."""

import numpy as np

from ..numba_config import SERIAL, njit
from .head import LOSS, LossHead


@njit(**SERIAL)
def cosine_similarity_kernel(predictions, labels, weights, grad, stats, epsilon, scale,
                             want_grad):
    n, k = predictions.shape
    total = 0.0
    cap = 1.0 / epsilon
    for row in range(n):
        pp, yy, py = 0.0, 0.0, 0.0
        for j in range(k):
            p, y = predictions[row, j], labels[row, j]
            pp += p * p
            yy += y * y
            py += p * y
        inv_p = min(1.0 / np.sqrt(pp), cap) if pp > 0 else cap
        inv_y = min(1.0 / np.sqrt(yy), cap) if yy > 0 else cap
        cosine = py * inv_p * inv_y  # sum(yn * pn)
        total -= weights[row] * cosine
        if want_grad:
            coefficient = weights[row] * scale / n
            clamped = inv_p >= cap  # the norm's clamp: p / eps, no slope through the norm
            for j in range(k):
                yn = labels[row, j] * inv_y
                if clamped:
                    slope = -yn * inv_p
                else:
                    slope = -inv_p * (yn - predictions[row, j] * inv_p * cosine)
                grad[row, j] = slope * coefficient
    stats[LOSS] = total / n


class CosineSimilarityHead(LossHead):
    """Args: name, epsilon (Keras' backend epsilon)."""

    def __init__(self, name, epsilon=1e-7):
        super().__init__(name)
        self.epsilon = epsilon

    def plan(self, builder, x, labels, weights, scale, want_grad, fused):
        stats = self.stats()
        outputs_memory, outputs = self.plain(builder, x, self.name)
        grad_memory, grad = self.buffer(builder, outputs.shape)
        builder.keep(outputs_memory)
        builder.add_forward(builder.kernel(
            cosine_similarity_kernel,
            (outputs, labels, weights, grad, stats, np.float32(self.epsilon), np.float32(scale),
             want_grad), f"{self.name} cosine similarity"))
        return outputs, stats, (grad_memory if want_grad else None)
