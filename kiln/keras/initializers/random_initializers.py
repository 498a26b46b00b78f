"""Random initializers (Keras 3's keras/src/initializers/random_initializers.py).

Seeds follow Keras 3: an int seed, or none, in which case the instance draws a seed of its own
when it is made (`seeds.default_seed`). Either way every call of the same instance returns the
same values, and the config keeps the seed the user gave (None for none), so a layer made from
a config draws new weights. The draws are Keras's on its JAX backend (`jax_draws`, threefry
bits), so an int seed gives Keras's values: uniform ones bit for bit, normal ones to the last
bit of float32. Another dtype than float32 is drawn in float32 and cast.
"""

import math

import numpy as np

from . import jax_draws, seeds
from .initializer import Initializer, standard_dtype, standard_shape


class RandomInitializer(Initializer):
    """Base of the seeded initializers: keeps the seed given (`_init_seed`, for the config)
    and the int seed drawn with (`seed`)."""

    def __init__(self, seed=None):
        if seed is not None and (not isinstance(seed, (int, np.integer))):
            raise ValueError(f"{type(self).__name__}: argument seed must be an int or None "
                             f"(kiln has no keras.random.SeedGenerator yet). Received: "
                             f"seed={seed!r}")
        self._init_seed = None if seed is None else int(seed)
        self.seed = seeds.default_seed() if seed is None else int(seed)

    def shape_and_dtype(self, shape, dtype):
        return standard_shape(self, shape), standard_dtype(self, dtype, True)

    def get_config(self):
        return {"seed": self._init_seed}


def scaled(values, stddev, mean):
    """`values * stddev + mean` in float32, two roundings: Keras runs them as two eager
    operations after the draw, which XLA does not fuse."""
    return values * np.float32(stddev) + np.float32(mean)


class RandomNormal(RandomInitializer):
    """Draws from a normal distribution of `mean` and `stddev`."""

    def __init__(self, mean=0.0, stddev=0.05, seed=None):
        self.mean, self.stddev = mean, stddev
        super().__init__(seed=seed)

    def __call__(self, shape, dtype=None):
        shape, dtype = self.shape_and_dtype(shape, dtype)
        return scaled(jax_draws.normal(self.seed, shape), self.stddev, self.mean).astype(dtype)

    def get_config(self):
        return {**super().get_config(), "mean": self.mean, "stddev": self.stddev}


class TruncatedNormal(RandomInitializer):
    """A normal distribution of `mean` and `stddev` truncated at two standard deviations from
    the mean (the variance is not rescaled)."""

    def __init__(self, mean=0.0, stddev=0.05, seed=None):
        self.mean, self.stddev = mean, stddev
        super().__init__(seed=seed)

    def __call__(self, shape, dtype=None):
        shape, dtype = self.shape_and_dtype(shape, dtype)
        values = jax_draws.truncated_normal(self.seed, shape)
        return scaled(values, self.stddev, self.mean).astype(dtype)

    def get_config(self):
        return {**super().get_config(), "mean": self.mean, "stddev": self.stddev}


class RandomUniform(RandomInitializer):
    """Draws from a uniform distribution on [minval, maxval)."""

    def __init__(self, minval=-0.05, maxval=0.05, seed=None):
        self.minval, self.maxval = minval, maxval
        super().__init__(seed=seed)

    def __call__(self, shape, dtype=None):
        shape, dtype = self.shape_and_dtype(shape, dtype)
        return jax_draws.uniform(self.seed, shape, self.minval, self.maxval).astype(dtype)

    def get_config(self):
        return {**super().get_config(), "minval": self.minval, "maxval": self.maxval}


def compute_fans(shape, input_axes=None, output_axes=None):
    """Keras's (fan_in, fan_out) of a weight shape: the product of `input_axes` /
    `output_axes` when both are given; else a scalar counts 1, a vector its length, a matrix
    (in, out), and a kernel (..., in, out) multiplies both by its receptive field (the product
    of the leading axes), whatever the layer's data_format (Keras's kernels are always
    (*window, in, out))."""
    shape = tuple(shape)
    if input_axes is not None and output_axes is not None:
        return (int(np.prod([shape[axis] for axis in input_axes])),
                int(np.prod([shape[axis] for axis in output_axes])))
    if len(shape) < 1:
        return 1, 1
    if len(shape) == 1:
        return shape[0], shape[0]
    receptive_field = int(np.prod(shape[:-2])) if len(shape) > 2 else 1
    return shape[-2] * receptive_field, shape[-1] * receptive_field


class VarianceScaling(RandomInitializer):
    """Variance `scale / n`, n being fan_in, fan_out or their mean (`mode`), drawn from
    `distribution`: "truncated_normal" (cut at two deviations, the deviation rescaled so the
    variance is `scale / n`; "normal" means this too), "untruncated_normal" or "uniform"
    (on [-limit, limit], limit = sqrt(3 * scale / n))."""

    MODES = ("fan_in", "fan_out", "fan_avg")
    DISTRIBUTIONS = ("truncated_normal", "untruncated_normal", "uniform")

    def __init__(self, scale=1.0, mode="fan_in", distribution="truncated_normal", seed=None,
                 input_axes=None, output_axes=None):
        name = type(self).__name__
        if not isinstance(scale, (int, float, np.number)) or not scale > 0.0:
            raise ValueError(f"{name}: argument scale must be a positive float. Received: "
                             f"scale={scale!r}")
        if mode not in self.MODES:
            raise ValueError(f"{name}: invalid `mode` argument: {mode!r}. Please use one of "
                             f"{self.MODES}")
        distribution = distribution.lower() if isinstance(distribution, str) else distribution
        distribution = "truncated_normal" if distribution == "normal" else distribution
        if distribution not in self.DISTRIBUTIONS:
            raise ValueError(f"{name}: invalid `distribution` argument: {distribution!r}. "
                             f"Please use one of {self.DISTRIBUTIONS}")
        self.scale, self.mode, self.distribution = scale, mode, distribution
        self.input_axes, self.output_axes = input_axes, output_axes
        super().__init__(seed=seed)

    def __call__(self, shape, dtype=None):
        shape, dtype = self.shape_and_dtype(shape, dtype)
        fan_in, fan_out = compute_fans(shape, self.input_axes, self.output_axes)
        fan = {"fan_in": fan_in, "fan_out": fan_out, "fan_avg": (fan_in + fan_out) / 2.0}
        variance = self.scale / max(1.0, fan[self.mode])
        if self.distribution == "truncated_normal":
            # 0.8796... is the deviation of a unit normal cut at two deviations
            stddev = math.sqrt(variance) / 0.87962566103423978
            values = scaled(jax_draws.truncated_normal(self.seed, shape), stddev, 0.0)
        elif self.distribution == "untruncated_normal":
            values = scaled(jax_draws.normal(self.seed, shape), math.sqrt(variance), 0.0)
        else:
            limit = math.sqrt(3.0 * variance)
            values = jax_draws.uniform(self.seed, shape, -limit, limit)
        return values.astype(dtype)

    def get_config(self):
        return {**super().get_config(), "scale": self.scale, "mode": self.mode,
                "distribution": self.distribution, "input_axes": self.input_axes,
                "output_axes": self.output_axes}


class _NamedVarianceScaling(VarianceScaling):
    """Glorot, He and Lecun: VarianceScaling with the class's (scale, mode, distribution);
    their config holds the seed and the axes only."""

    RULE = ()

    def __init__(self, seed=None, input_axes=None, output_axes=None):
        super().__init__(*self.RULE, seed=seed, input_axes=input_axes, output_axes=output_axes)

    def get_config(self):
        return {"seed": self._init_seed, "input_axes": self.input_axes,
                "output_axes": self.output_axes}


class GlorotUniform(_NamedVarianceScaling):
    """Uniform on [-limit, limit], limit = sqrt(6 / (fan_in + fan_out))."""

    RULE = (1.0, "fan_avg", "uniform")


class GlorotNormal(_NamedVarianceScaling):
    """Truncated normal of deviation sqrt(2 / (fan_in + fan_out))."""

    RULE = (1.0, "fan_avg", "truncated_normal")


class LecunUniform(_NamedVarianceScaling):
    """Uniform on [-limit, limit], limit = sqrt(3 / fan_in)."""

    RULE = (1.0, "fan_in", "uniform")


class LecunNormal(_NamedVarianceScaling):
    """Truncated normal of deviation sqrt(1 / fan_in)."""

    RULE = (1.0, "fan_in", "truncated_normal")


class HeUniform(_NamedVarianceScaling):
    """Uniform on [-limit, limit], limit = sqrt(6 / fan_in)."""

    RULE = (2.0, "fan_in", "uniform")


class HeNormal(_NamedVarianceScaling):
    """Truncated normal of deviation sqrt(2 / fan_in)."""

    RULE = (2.0, "fan_in", "truncated_normal")


class Orthogonal(RandomInitializer):
    """An orthogonal matrix times `gain`: the Q of the QR decomposition of a normal matrix
    (rows: the product of all axes but the last), its signs fixed by R's diagonal, so it is
    uniform over the orthogonal matrices. Fewer rows than columns gives orthogonal rows."""

    def __init__(self, gain=1.0, seed=None):
        self.gain = gain
        super().__init__(seed=seed)

    def __call__(self, shape, dtype=None):
        shape, dtype = self.shape_and_dtype(shape, dtype)
        if len(shape) < 2:
            raise ValueError(f"Orthogonal: the tensor to initialize must be at least "
                             f"two-dimensional. Received: shape={shape} of rank {len(shape)}.")
        rows, columns = int(np.prod(shape[:-1])), shape[-1]
        values = jax_draws.normal(self.seed, (max(rows, columns), min(rows, columns)))
        q, r = np.linalg.qr(values)
        q *= np.sign(np.diag(r))
        if rows < columns:
            q = q.T
        return (self.gain * q).reshape(shape).astype(dtype)

    def get_config(self):
        return {**super().get_config(), "gain": self.gain}
