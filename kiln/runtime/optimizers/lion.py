"""Lion, Keras 3's rule (keras/src/optimizers/lion.py):
w -= lr * sign(beta_1 * m + (1 - beta_1) * g); then m = beta_2 * m + (1 - beta_2) * g."""

import numpy as np

from ...ops.numba_config import PARALLEL, njit, prange
from .updater import Updater


@njit(**PARALLEL)
def lion_kernel(w, g, m, scale, decay, clip, lr, beta_1, one_minus_beta_1, beta_2,
                one_minus_beta_2):
    for i in prange(w.size):
        gi = g[i] * scale
        if clip > 0:
            gi = min(max(gi, -clip), clip)
        wi = w[i] - w[i] * decay
        w[i] = wi - lr * np.sign(m[i] * beta_1 + gi * one_minus_beta_1)
        m[i] = m[i] * beta_2 + gi * one_minus_beta_2


class LionUpdater(Updater):
    kernel_slots = ("momentum",)

    def __init__(self, learning_rate, beta_1=0.9, beta_2=0.99, **options):
        super().__init__(learning_rate, **options)
        self.beta_1, self.beta_2 = np.float32(beta_1), np.float32(beta_2)
        self.one_minus_beta_1 = np.float32(1.0 - float(beta_1))
        self.one_minus_beta_2 = np.float32(1.0 - float(beta_2))

    def _run(self, views, scale, decay, clip, lr):
        w, g, m = views
        lion_kernel(w, g, m, scale, decay, clip, lr, self.beta_1, self.one_minus_beta_1,
                    self.beta_2, self.one_minus_beta_2)
