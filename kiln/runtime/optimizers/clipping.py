"""The squared L2 norm of a gradient, as one parallel reduction (for clipnorm and
global_clipnorm, which need the norm before the update kernel can scale by it).

Accumulated in float64: the norm of a million float32 gradients summed in float32 drifts
visibly from Keras's (XLA sums pairwise); float64 stays within float32 rounding of it.
"""

import numpy as np

from ...ops.numba_config import PARALLEL, njit, prange


@njit(**PARALLEL)
def squared_norm(g):
    total = 0.0
    for i in prange(g.size):
        x = np.float64(g[i])
        total += x * x
    return total
