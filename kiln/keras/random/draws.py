"""keras.random's float draws: normal, uniform, truncated_normal and dropout.

Eagerly they return numpy arrays equal to Keras 3's on its JAX backend for the same seed (an
int or a SeedGenerator made with an int): the same threefry key, the same kernel as the
initializers. Inside a layer's call() they are RandomDrawOps, drawn again at every step;
`dropout` of a tensor is that tensor times a drawn keep mask (1 / keep where kept, else 0), so
its gradient is the same mask.
"""

import numpy as np

from ...graph.symbolic import SymbolicTensor
from ...ops.random_draw import draw_array
from ..ops.core import keras_array
from ..ops.elementwise import multiply
from .arguments import (
    checked_float_dtype,
    checked_number,
    checked_shape,
    in_model,
    planned_draw,
)
from .seed_generator import check_seed, draw_key


def _draw(function, shape, kind, a, b, dtype, seed):
    dtype = checked_float_dtype(dtype, function)
    check_seed(seed, function)
    if in_model(function):
        if dtype != "float32":
            raise ValueError(f"keras.random.{function}: inside a model draws are float32, got "
                             f"dtype={dtype!r}")
        return planned_draw(function, shape, kind, a, b, seed)
    shape = checked_shape(shape, function)
    return draw_array(shape, kind, a, b, *draw_key(seed, function)).astype(dtype)


def normal(shape, mean=0.0, stddev=1.0, dtype=None, seed=None):
    """Values from N(mean, stddev**2), as `keras.random.normal`."""
    mean = checked_number(mean, "normal", "mean")
    stddev = checked_number(stddev, "normal", "stddev")
    return _draw("normal", shape, "normal", mean, stddev, dtype, seed)


def uniform(shape, minval=0.0, maxval=1.0, dtype=None, seed=None):
    """Values uniform on [minval, maxval), as `keras.random.uniform`."""
    minval = checked_number(minval, "uniform", "minval")
    maxval = checked_number(maxval, "uniform", "maxval")
    return _draw("uniform", shape, "uniform", minval, maxval, dtype, seed)


def truncated_normal(shape, mean=0.0, stddev=1.0, dtype=None, seed=None):
    """N(mean, stddev**2) values kept within two standard deviations of the mean (drawn
    again beyond), as `keras.random.truncated_normal`."""
    mean = checked_number(mean, "truncated_normal", "mean")
    stddev = checked_number(stddev, "truncated_normal", "stddev")
    return _draw("truncated_normal", shape, "truncated_normal", mean, stddev, dtype, seed)


def _noise_shape(noise_shape, input_shape):
    """Keras's noise_shape with None entries taken from the input's shape; it must broadcast
    to the input (each size equal or 1)."""
    if noise_shape is None:
        return tuple(input_shape)
    if not isinstance(noise_shape, (tuple, list)) or len(noise_shape) != len(input_shape):
        raise ValueError(f"keras.random.dropout: argument noise_shape must be a tuple of "
                         f"{len(input_shape)} ints or None (one per axis of the inputs of "
                         f"shape {tuple(input_shape)}), got {noise_shape!r}")
    shape = tuple(size if noise is None else noise
                  for noise, size in zip(noise_shape, input_shape, strict=True))
    if any(noise not in (size, 1) for noise, size in zip(shape, input_shape, strict=True)
           if noise is not None and size is not None):
        raise ValueError(f"keras.random.dropout: argument noise_shape {tuple(noise_shape)} "
                         f"does not broadcast to the inputs' shape {tuple(input_shape)} "
                         "(each size must be the input's, 1 or None)")
    return shape


def dropout(inputs, rate, noise_shape=None, seed=None):
    """`inputs` with a fraction `rate` of its entries set to 0 and the rest scaled by
    1 / (1 - rate), as `keras.random.dropout` (always, whatever the training mode)."""
    rate = checked_number(rate, "dropout", "rate")
    if not 0.0 <= rate <= 1.0:
        raise ValueError(f"keras.random.dropout: argument rate must be in [0, 1], got {rate}")
    check_seed(seed, "dropout")
    if isinstance(inputs, SymbolicTensor):
        shape = _noise_shape(noise_shape, inputs.shape)
        if rate == 0.0:
            return inputs
        if rate == 1.0:
            return multiply(inputs, 0.0)
        if shape[0] not in (None, inputs.shape[0]):
            raise NotImplementedError(
                f"keras.random.dropout: inside a model the mask has the batch axis, got "
                f"noise_shape {tuple(noise_shape)} for inputs of shape {inputs.shape}")
        mask = planned_draw("dropout", (None, *shape[1:]), "keep_mask", 1.0 - rate, 0.0, seed,
                            reference=inputs)
        return multiply(inputs, mask)
    x = keras_array(inputs)
    if rate == 0.0:
        return x
    if rate == 1.0:
        return np.zeros_like(x)
    keep = np.float32(1.0 - rate)
    shape = _noise_shape(noise_shape, x.shape)
    # jax.random.bernoulli: a uniform draw below the keep probability
    kept = draw_array(shape, "uniform", 0.0, 1.0, *draw_key(seed, "dropout")) < keep
    return np.where(np.broadcast_to(kept, x.shape), x / keep, np.zeros_like(x))
