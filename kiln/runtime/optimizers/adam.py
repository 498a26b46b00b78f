"""Adam (and AdamW, which is Adam with weight_decay), Keras 3's rule
(keras/src/optimizers/adam.py): m += (g - m) * (1 - beta_1); v += (g^2 - v) * (1 - beta_2);
amsgrad: v_hat = max(v_hat, v), used in place of v; w -= m * alpha / (sqrt(v) + epsilon) with
alpha = lr * sqrt(1 - beta_2^t) / (1 - beta_1^t), t = iterations + 1."""

import math

import numpy as np

from ...ops.numba_config import PARALLEL, njit, prange
from .updater import Updater


@njit(**PARALLEL)
def adam_kernel(w, g, m, v, v_hat, scale, decay, clip, alpha, one_minus_beta_1,
                one_minus_beta_2, epsilon, amsgrad):
    for i in prange(w.size):
        gi = g[i] * scale
        if clip > 0:
            gi = min(max(gi, -clip), clip)
        wi = w[i] - w[i] * decay
        m_i = m[i] + (gi - m[i]) * one_minus_beta_1
        v_i = v[i] + (gi * gi - v[i]) * one_minus_beta_2
        m[i] = m_i
        v[i] = v_i
        if amsgrad:
            v_i = max(v_hat[i], v_i)
            v_hat[i] = v_i
        w[i] = wi - m_i * alpha / (np.sqrt(v_i) + epsilon)


class AdamUpdater(Updater):
    kernel_slots = ("momentum", "velocity", "velocity_hat")

    def __init__(self, learning_rate, beta_1=0.9, beta_2=0.999, epsilon=1e-7, amsgrad=False,
                 **options):
        super().__init__(learning_rate, **options)
        self.beta_1, self.beta_2 = float(beta_1), float(beta_2)
        self.epsilon, self.amsgrad = np.float32(epsilon), bool(amsgrad)
        self.one_minus_beta_1 = np.float32(1.0 - self.beta_1)
        self.one_minus_beta_2 = np.float32(1.0 - self.beta_2)
        self._correction = 1.0

    def slot_names(self):
        return ("momentum", "velocity", *(("velocity_hat",) if self.amsgrad else ()))

    def _prepare(self, step):
        self._correction = math.sqrt(1.0 - self.beta_2 ** step) / (1.0 - self.beta_1 ** step)

    def _run(self, views, scale, decay, clip, lr):
        w, g, m, v, v_hat = views
        adam_kernel(w, g, m, v, v_hat, scale, decay, clip, np.float32(lr * self._correction),
                    self.one_minus_beta_1, self.one_minus_beta_2, self.epsilon, self.amsgrad)
