"""SGD with momentum and Nesterov momentum, Keras 3's rule (keras/src/optimizers/sgd.py):
m = momentum * m - lr * g; w += m (or, Nesterov, w += momentum * m - lr * g); without
momentum there is no slot and w -= lr * g."""

import numpy as np

from ...ops.numba_config import PARALLEL, njit, prange
from .updater import Updater

# Every scalar reaches the kernels as float32 (a Python float would promote the arithmetic to
# float64). Each kernel starts with the same three lines: the scaled and clipped gradient, and
# Keras 3's weight decay w - w * (wd * lr), applied before the rule.


@njit(**PARALLEL)
def sgd_kernel(w, g, m, scale, decay, clip, lr, momentum, use_momentum, nesterov):
    for i in prange(w.size):
        gi = g[i] * scale
        if clip > 0:
            gi = min(max(gi, -clip), clip)
        wi = w[i] - w[i] * decay
        if use_momentum:
            m_i = m[i] * momentum - gi * lr
            m[i] = m_i
            if nesterov:
                w[i] = wi + (m_i * momentum - gi * lr)
            else:
                w[i] = wi + m_i
        else:
            w[i] = wi - gi * lr


class SGDUpdater(Updater):
    kernel_slots = ("momentum",)

    def __init__(self, learning_rate, momentum=0.0, nesterov=False, **options):
        super().__init__(learning_rate, **options)
        self.momentum, self.nesterov = np.float32(momentum), bool(nesterov)

    def slot_names(self):
        return ("momentum",) if self.momentum != 0 else ()

    def _run(self, views, scale, decay, clip, lr):
        w, g, m = views
        sgd_kernel(w, g, m, scale, decay, clip, lr, self.momentum, bool(self.momentum != 0),
                   self.nesterov)
