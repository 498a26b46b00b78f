"""Nadam, Keras 3's rule (keras/src/optimizers/nadam.py) with its momentum cache: before each
step u_product *= u_t, where u_t = beta_1 * (1 - 0.5 * 0.96^t); then
m_hat = u_{t+1} * m / (1 - u_product * u_{t+1}) + (1 - u_t) * g / (1 - u_product),
v_hat = v / (1 - beta_2^t), w -= lr * m_hat / (sqrt(v_hat) + epsilon)."""

import numpy as np

from ...ops.numba_config import PARALLEL, njit, prange
from .updater import Updater


@njit(**PARALLEL)
def nadam_kernel(w, g, m, v, scale, decay, clip, lr, one_minus_beta_1, one_minus_beta_2,
                 momentum_weight, gradient_weight, velocity_weight, epsilon):
    for i in prange(w.size):
        gi = g[i] * scale
        if clip > 0:
            gi = min(max(gi, -clip), clip)
        wi = w[i] - w[i] * decay
        m_i = m[i] + (gi - m[i]) * one_minus_beta_1
        v_i = v[i] + (gi * gi - v[i]) * one_minus_beta_2
        m[i] = m_i
        v[i] = v_i
        m_hat = momentum_weight * m_i + gradient_weight * gi
        w[i] = wi - m_hat * lr / (np.sqrt(v_i * velocity_weight) + epsilon)


class NadamUpdater(Updater):
    kernel_slots = ("momentum", "velocity")

    def __init__(self, learning_rate, beta_1=0.9, beta_2=0.999, epsilon=1e-7, **options):
        super().__init__(learning_rate, **options)
        self.beta_1, self.beta_2 = float(beta_1), float(beta_2)
        self.epsilon = np.float32(epsilon)
        self.one_minus_beta_1 = np.float32(1.0 - self.beta_1)
        self.one_minus_beta_2 = np.float32(1.0 - self.beta_2)
        self.u_product = 1.0
        self._weights = (np.float32(0), np.float32(0), np.float32(0))

    def _prepare(self, step):
        u_t = self.beta_1 * (1.0 - 0.5 * 0.96 ** step)
        u_next = self.beta_1 * (1.0 - 0.5 * 0.96 ** (step + 1))
        self.u_product *= u_t
        self._weights = (np.float32(u_next / (1.0 - self.u_product * u_next)),
                         np.float32((1.0 - u_t) / (1.0 - self.u_product)),
                         np.float32(1.0 / (1.0 - self.beta_2 ** step)))

    def _run(self, views, scale, decay, clip, lr):
        w, g, m, v = views
        nadam_kernel(w, g, m, v, scale, decay, clip, lr, self.one_minus_beta_1,
                     self.one_minus_beta_2, *self._weights, self.epsilon)

    def _scalar_state(self):
        return {"u_product": self.u_product}

    def _set_scalar_state(self, state):
        if "u_product" in state:
            self.u_product = state["u_product"]
