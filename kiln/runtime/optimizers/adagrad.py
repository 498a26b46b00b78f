"""Adagrad, Keras 3's rule (keras/src/optimizers/adagrad.py): the accumulator starts at
initial_accumulator_value; acc += g^2; w -= lr * g / sqrt(acc + epsilon)."""

import numpy as np

from ...ops.numba_config import PARALLEL, njit, prange
from .updater import Updater


@njit(**PARALLEL)
def adagrad_kernel(w, g, accumulator, scale, decay, clip, lr, epsilon):
    for i in prange(w.size):
        gi = g[i] * scale
        if clip > 0:
            gi = min(max(gi, -clip), clip)
        wi = w[i] - w[i] * decay
        a = accumulator[i] + gi * gi
        accumulator[i] = a
        w[i] = wi - lr * gi / np.sqrt(a + epsilon)


class AdagradUpdater(Updater):
    kernel_slots = ("accumulator",)

    def __init__(self, learning_rate, initial_accumulator_value=0.1, epsilon=1e-7, **options):
        super().__init__(learning_rate, **options)
        # padding in blocked layouts gets it too: harmless, its gradient is always zero
        self.slot_initial_value = float(initial_accumulator_value)
        self.epsilon = np.float32(epsilon)

    def _run(self, views, scale, decay, clip, lr):
        w, g, accumulator = views
        adagrad_kernel(w, g, accumulator, scale, decay, clip, lr, self.epsilon)
