"""RMSprop, Keras 3's rule (keras/src/optimizers/rmsprop.py), which differs from Keras 2's:
epsilon is inside the square root. v = rho * v + (1 - rho) * g^2; centered: a = rho * a +
(1 - rho) * g, denominator v - a^2 + eps, else v + eps; step = lr * g / sqrt(denominator);
with momentum: mom = momentum * mom + step, w -= mom; else w -= step."""

import numpy as np

from ...ops.numba_config import PARALLEL, njit, prange
from .updater import Updater


# The plain rule (no momentum, not centered; the default, and cifar10_cnn's) has a kernel of
# its own: with the two options as runtime flags, numba's loop stopped vectorizing and ran
# several times slower (docs/performance.md, 'Decisions and their measurements').
@njit(**PARALLEL)
def rmsprop_plain_kernel(w, g, velocity, scale, decay, clip, lr, rho, one_minus_rho, epsilon):
    for i in prange(w.size):
        gi = g[i] * scale
        if clip > 0:
            gi = min(max(gi, -clip), clip)
        wi = w[i] - w[i] * decay
        v = rho * velocity[i] + one_minus_rho * (gi * gi)
        velocity[i] = v
        w[i] = wi - lr * gi / np.sqrt(v + epsilon)


@njit(**PARALLEL)
def rmsprop_kernel(w, g, velocity, momentum_slot, average, scale, decay, clip, lr, rho,
                   one_minus_rho, momentum, epsilon, use_momentum, centered):
    for i in prange(w.size):
        gi = g[i] * scale
        if clip > 0:
            gi = min(max(gi, -clip), clip)
        wi = w[i] - w[i] * decay
        v = rho * velocity[i] + one_minus_rho * (gi * gi)
        velocity[i] = v
        if centered:
            a = rho * average[i] + one_minus_rho * gi
            average[i] = a
            denominator = v - a * a + epsilon
        else:
            denominator = v + epsilon
        step = lr * gi / np.sqrt(denominator)
        if use_momentum:
            step = momentum * momentum_slot[i] + step
            momentum_slot[i] = step
        w[i] = wi - step


class RMSpropUpdater(Updater):
    kernel_slots = ("velocity", "momentum", "average_gradient")

    def __init__(self, learning_rate, rho=0.9, momentum=0.0, epsilon=1e-7, centered=False,
                 **options):
        super().__init__(learning_rate, **options)
        self.rho, self.momentum = np.float32(rho), np.float32(momentum)
        self.epsilon, self.centered = np.float32(epsilon), bool(centered)
        self.one_minus_rho = np.float32(1.0 - float(rho))

    def slot_names(self):
        return ("velocity", *(("momentum",) if self.momentum > 0 else ()),
                *(("average_gradient",) if self.centered else ()))

    def _run(self, views, scale, decay, clip, lr):
        w, g, velocity, momentum, average = views
        if not self.centered and not self.momentum > 0:
            rmsprop_plain_kernel(w, g, velocity, scale, decay, clip, lr, self.rho,
                                 self.one_minus_rho, self.epsilon)
            return
        rmsprop_kernel(w, g, velocity, momentum, average, scale, decay, clip, lr, self.rho,
                       self.one_minus_rho, self.momentum, self.epsilon,
                       bool(self.momentum > 0), self.centered)
