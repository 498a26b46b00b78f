"""keras.random's gamma, beta and binomial draws, eagerly.

jax.random draws these by rejection sampling with a key split per element, which kiln does
not reproduce: the values come from numpy's generator seeded with the same threefry key, so
a seed still gives the same values at every call (a SeedGenerator new ones at each), with
Keras's distributions but not Keras-on-JAX's numbers. Inside a layer's call(), with number
parameters, they are DistributionDrawOps (numba's generator seeded with the key, drawn again
at every step).
"""

import numpy as np

from ..ops.core import keras_array
from .arguments import checked_float_dtype, checked_shape, in_model, planned_distribution
from .discrete import refuse_in_model
from .seed_generator import check_seed, draw_key


def _generator(seed, function):
    check_seed(seed, function)
    return np.random.default_rng(list(draw_key(seed, function)))


def _parameter(value, shape, function, argument, low, high=np.inf, low_open=True):
    """A parameter broadcast to `shape`, checked to lie in its range."""
    try:
        array = np.broadcast_to(keras_array(value).astype(np.float64), shape)
    except ValueError:
        raise ValueError(f"keras.random.{function}: argument {argument} of shape "
                         f"{np.shape(value)} does not broadcast to shape {shape}") from None
    except TypeError:
        raise ValueError(f"keras.random.{function}: argument {argument} must be a number "
                         f"or an array of numbers, got {value!r}") from None
    below = array <= low if low_open else array < low
    if np.any(below) or np.any(array > high) or np.any(np.isnan(array)):
        bracket = "(" if low_open else "["
        raise ValueError(f"keras.random.{function}: argument {argument} must be in "
                         f"{bracket}{low}, {high}], got {value!r}")
    return array


def gamma(shape, alpha, dtype=None, seed=None):
    """Gamma(alpha, 1) values, as `keras.random.gamma`."""
    refuse_in_model("gamma", alpha)
    dtype = checked_float_dtype(dtype, "gamma")
    if in_model("gamma"):
        _parameter(alpha, (), "gamma", "alpha", 0.0)
        check_seed(seed, "gamma")
        return planned_distribution("gamma", shape, float(alpha), 0.0, seed)
    shape = checked_shape(shape, "gamma")
    alpha = _parameter(alpha, shape, "gamma", "alpha", 0.0)
    return _generator(seed, "gamma").standard_gamma(alpha, shape).astype(dtype)


def beta(shape, alpha, beta, dtype=None, seed=None):
    """Beta(alpha, beta) values, as `keras.random.beta`."""
    refuse_in_model("beta", alpha, beta)
    dtype = checked_float_dtype(dtype, "beta")
    if in_model("beta"):
        for argument, value in (("alpha", alpha), ("beta", beta)):
            _parameter(value, (), "beta", argument, 0.0)
        check_seed(seed, "beta")
        return planned_distribution("beta", shape, float(alpha), float(beta), seed)
    shape = checked_shape(shape, "beta")
    a = _parameter(alpha, shape, "beta", "alpha", 0.0)
    b = _parameter(beta, shape, "beta", "beta", 0.0)
    return _generator(seed, "beta").beta(a, b, shape).astype(dtype)


def binomial(shape, counts, probabilities, dtype=None, seed=None):
    """The number of successes in `counts` trials of probability `probabilities` (floats, as
    Keras's default dtype), as `keras.random.binomial`."""
    refuse_in_model("binomial", counts, probabilities)
    dtype = checked_float_dtype(dtype, "binomial")
    if in_model("binomial"):
        n = _parameter(counts, (), "binomial", "counts", 0.0, low_open=False)
        if n != np.round(n):
            raise ValueError(f"keras.random.binomial: argument counts must be a whole "
                             f"number, got {counts!r}")
        _parameter(probabilities, (), "binomial", "probabilities", 0.0, 1.0, low_open=False)
        check_seed(seed, "binomial")
        return planned_distribution("binomial", shape, float(n), float(probabilities), seed)
    shape = checked_shape(shape, "binomial")
    n = _parameter(counts, shape, "binomial", "counts", 0.0, low_open=False)
    if np.any(n != np.round(n)):
        raise ValueError(f"keras.random.binomial: argument counts must be whole numbers, got "
                         f"{counts!r}")
    p = _parameter(probabilities, shape, "binomial", "probabilities", 0.0, 1.0,
                   low_open=False)
    return _generator(seed, "binomial").binomial(n.astype(np.int64), p, shape).astype(dtype)
