"""Keras 3's random draws on its JAX backend (keras/src/backend/jax/random.py over
jax.random), in float32 from the threefry kernel: `uniform`, `normal`, `truncated_normal`."""

import math

import numpy as np

from ...ops.threefry_kernels import NORMAL, UNIFORM, draws

F32 = np.float32
_SQRT2 = F32(math.sqrt(2.0))


def uniform(seed, shape, minval, maxval):
    """jax.random.uniform on [minval, maxval), bit for bit."""
    return draws(seed, shape, UNIFORM, F32(minval), F32(maxval))


def normal(seed, shape):
    """jax.random.normal: sqrt(2) erfinv(u), u uniform on (-1, 1)."""
    return draws(seed, shape, NORMAL, np.nextafter(F32(-1.0), F32(0.0)), F32(1.0))


def truncated_normal(seed, shape):
    """jax.random.truncated_normal(lower=-2, upper=2): the inverse CDF of a uniform draw
    between erf(-2 / sqrt(2)) and erf(2 / sqrt(2)), kept strictly inside (-2, 2)."""
    low, high = (F32(math.erf(float(F32(bound) / _SQRT2))) for bound in (-2.0, 2.0))
    values = draws(seed, shape, NORMAL, low, high)
    return np.clip(values, np.nextafter(F32(-2.0), F32(np.inf)),
                   np.nextafter(F32(2.0), F32(-np.inf)))
