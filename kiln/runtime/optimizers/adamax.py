"""Adamax, Keras 3's rule (keras/src/optimizers/adamax.py): m += (g - m) * (1 - beta_1);
u = max(beta_2 * u, |g|); w -= lr * m / ((1 - beta_1^t) * (u + epsilon))."""

import numpy as np

from ...ops.numba_config import PARALLEL, njit, prange
from .updater import Updater


@njit(**PARALLEL)
def adamax_kernel(w, g, m, u, scale, decay, clip, lr, one_minus_beta_1, beta_2, correction,
                  epsilon):
    for i in prange(w.size):
        gi = g[i] * scale
        if clip > 0:
            gi = min(max(gi, -clip), clip)
        wi = w[i] - w[i] * decay
        m_i = m[i] + (gi - m[i]) * one_minus_beta_1
        u_i = max(beta_2 * u[i], abs(gi))
        m[i] = m_i
        u[i] = u_i
        w[i] = wi - lr * m_i / (correction * (u_i + epsilon))


class AdamaxUpdater(Updater):
    kernel_slots = ("momentum", "norm")

    def __init__(self, learning_rate, beta_1=0.9, beta_2=0.999, epsilon=1e-7, **options):
        super().__init__(learning_rate, **options)
        self.beta_1 = float(beta_1)
        self.beta_2, self.epsilon = np.float32(beta_2), np.float32(epsilon)
        self.one_minus_beta_1 = np.float32(1.0 - self.beta_1)
        self._correction = np.float32(1.0)

    def _prepare(self, step):
        self._correction = np.float32(1.0 - self.beta_1 ** step)

    def _run(self, views, scale, decay, clip, lr):
        w, g, m, u = views
        adamax_kernel(w, g, m, u, scale, decay, clip, lr, self.one_minus_beta_1, self.beta_2,
                      self._correction, self.epsilon)
