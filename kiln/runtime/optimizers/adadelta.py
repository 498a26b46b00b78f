"""Adadelta, Keras 3's rule (keras/src/optimizers/adadelta.py), the same as Keras 2's:
acc_g = rho * acc_g + (1 - rho) * g^2; delta = -sqrt(acc_d + eps) * g / sqrt(acc_g + eps);
acc_d = rho * acc_d + (1 - rho) * delta^2; w += lr * delta."""

import numpy as np

from ...ops.numba_config import PARALLEL, njit, prange
from .updater import Updater


@njit(**PARALLEL)
def adadelta_kernel(w, g, accumulated_grad, accumulated_delta, scale, decay, clip, lr, rho,
                    one_minus_rho, epsilon):
    for i in prange(w.size):
        gi = g[i] * scale
        if clip > 0:
            gi = min(max(gi, -clip), clip)
        wi = w[i] - w[i] * decay
        a = rho * accumulated_grad[i] + one_minus_rho * (gi * gi)
        accumulated_grad[i] = a
        delta = -(np.sqrt(accumulated_delta[i] + epsilon) * gi) / np.sqrt(a + epsilon)
        accumulated_delta[i] = rho * accumulated_delta[i] + one_minus_rho * (delta * delta)
        w[i] = wi + lr * delta


class AdadeltaUpdater(Updater):
    kernel_slots = ("accumulated_grad", "accumulated_delta_var")

    def __init__(self, learning_rate, rho=0.95, epsilon=1e-7, **options):
        super().__init__(learning_rate, **options)
        self.rho, self.epsilon = np.float32(rho), np.float32(epsilon)
        self.one_minus_rho = np.float32(1.0 - float(rho))

    def _run(self, views, scale, decay, clip, lr):
        w, g, accumulated_grad, accumulated_delta = views
        adadelta_kernel(w, g, accumulated_grad, accumulated_delta, scale, decay, clip, lr,
                        self.rho, self.one_minus_rho, self.epsilon)
