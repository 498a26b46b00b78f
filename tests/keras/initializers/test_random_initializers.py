"""keras.initializers' random classes against real Keras 3 (JAX backend): the configs both
ways, Keras 3's seed semantics, the fans (dense, conv 1D / 2D / 3D kernels, explicit axes),
and the values. kiln draws JAX's threefry stream as Keras on JAX does, so a seeded draw equals
Keras's to the last bit of float32: exactly for uniform draws under XLA's default optimizations
(which fuse u * (high - low) + low into one rounding, as kiln does); the oracle here turns them
off (see keras_oracle.real_keras), and normal draws may round erfinv's log1p differently, so
the values are compared to within two float32 steps of the largest. The distributions are also
checked against the exact laws (Kolmogorov-Smirnov statistics, moments and truncation
bounds), so a rule wrong on both sides would show too."""

import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parents[1]))  # the shared real-Keras helper

import numpy as np  # noqa: E402
import pytest  # noqa: E402
from keras_oracle import real_keras  # noqa: E402
from scipy import stats  # noqa: E402

from kiln.keras import initializers  # noqa: E402

# a conv kernel (kh, kw, in, out): fan_in 3 * 3 * 40, fan_out 3 * 3 * 60, 32400 values
KERNEL = (3, 3, 40, 60)
FAN_IN, FAN_OUT = 3 * 3 * 40, 3 * 3 * 60
# KS statistic of 32400 values against their law: D above 0.0125 has p < 1e-4
KS_LIMIT = 0.0125
TRUNCATION = 0.87962566103423978  # deviation of a unit normal cut at +-2


def exact(distribution, scale):
    """The distribution a variance-scaling initializer draws from (Keras's rule), as scipy's
    frozen distribution, with its support bound."""
    if distribution == "uniform":
        limit = math.sqrt(3.0 * scale)
        return stats.uniform(-limit, 2 * limit), limit
    if distribution == "untruncated_normal":
        return stats.norm(0.0, math.sqrt(scale)), math.inf
    stddev = math.sqrt(scale) / TRUNCATION
    return stats.truncnorm(-2.0, 2.0, scale=stddev), 2.0 * stddev


def assert_keras_values(ours, theirs):
    """Keras's values to the last bit or two of float32 (a wrong seed, counter or scale
    differs in every value), and most of them exactly."""
    theirs = np.asarray(theirs)
    np.testing.assert_allclose(ours, theirs, rtol=0, atol=2 * np.spacing(np.abs(theirs).max()))
    assert np.mean(ours == theirs) > 0.4


VARIANCE_SCALING = [  # (make(module), distribution, variance)
    (lambda m: m.GlorotUniform(seed=1), "uniform", 2.0 / (FAN_IN + FAN_OUT)),
    (lambda m: m.GlorotNormal(seed=2), "truncated_normal", 2.0 / (FAN_IN + FAN_OUT)),
    (lambda m: m.HeUniform(seed=3), "uniform", 2.0 / FAN_IN),
    (lambda m: m.HeNormal(seed=4), "truncated_normal", 2.0 / FAN_IN),
    (lambda m: m.LecunUniform(seed=5), "uniform", 1.0 / FAN_IN),
    (lambda m: m.LecunNormal(seed=6), "truncated_normal", 1.0 / FAN_IN),
    (lambda m: m.VarianceScaling(0.5, "fan_out", "untruncated_normal", seed=7),
     "untruncated_normal", 0.5 / FAN_OUT),
    (lambda m: m.VarianceScaling(3.0, "fan_out", "uniform", seed=8), "uniform", 3.0 / FAN_OUT),
    (lambda m: m.VarianceScaling(2.0, "fan_avg", "normal", seed=9), "truncated_normal",
     2.0 / ((FAN_IN + FAN_OUT) / 2)),
]


@pytest.mark.parametrize("make, distribution, variance", VARIANCE_SCALING)
def test_variance_scaling_draws_keras_distribution(make, distribution, variance):
    keras = real_keras()
    ours = make(initializers)(KERNEL)
    theirs = np.asarray(make(keras.initializers)(KERNEL))
    assert ours.shape == KERNEL and ours.dtype == np.float32
    assert_keras_values(ours, theirs)
    law, bound = exact(distribution, variance)
    assert stats.kstest(ours.ravel(), law.cdf).statistic < KS_LIMIT
    assert ours.var() == pytest.approx(variance, rel=0.03)
    assert abs(ours.mean()) < 0.03 * math.sqrt(variance)
    if math.isfinite(bound):  # nothing beyond the limit, and values reach close to it
        assert np.abs(ours).max() <= bound * (1 + 1e-6)
        assert np.abs(ours).max() > 0.98 * bound
        assert np.abs(theirs).max() <= bound * (1 + 1e-6)


@pytest.mark.parametrize("make, law", [
    (lambda m: m.RandomNormal(mean=1.0, stddev=0.5, seed=1), stats.norm(1.0, 0.5)),
    (lambda m: m.RandomUniform(minval=-0.2, maxval=0.1, seed=2), stats.uniform(-0.2, 0.3)),
    # cut at two deviations around the mean, the deviation not rescaled
    (lambda m: m.TruncatedNormal(mean=1.0, stddev=0.5, seed=3),
     stats.truncnorm(-2.0, 2.0, loc=1.0, scale=0.5)),
    (lambda m: m.RandomNormal(seed=4), stats.norm(0.0, 0.05)),  # Keras's defaults
    (lambda m: m.RandomUniform(seed=5), stats.uniform(-0.05, 0.1)),
    (lambda m: m.TruncatedNormal(seed=6), stats.truncnorm(-2.0, 2.0, scale=0.05)),
])
def test_fixed_distributions_match_keras(make, law):
    keras = real_keras()
    ours = make(initializers)(KERNEL)
    theirs = np.asarray(make(keras.initializers)(KERNEL))
    assert_keras_values(ours, theirs)
    assert stats.kstest(ours.ravel(), law.cdf).statistic < KS_LIMIT
    low, high = law.support()
    assert ours.min() >= low - 1e-6 and ours.max() <= high + 1e-6
    assert ours.mean() == pytest.approx(law.mean(), abs=0.03 * law.std())
    assert ours.std() == pytest.approx(law.std(), rel=0.02)


@pytest.mark.parametrize("shape", [(), (7,), (3, 4), (3, 5, 7), (2, 3, 4, 5), (2, 3, 4, 5, 6)])
def test_fans_are_keras_fans(shape):
    """Scalars, biases, Dense kernels and Conv1D / 2D / 3D kernels (Keras keeps (*window, in,
    out) for either data_format, so the fans do not depend on it)."""
    real_keras()
    from keras.src.initializers.random_initializers import compute_fans

    assert initializers.compute_fans(shape) == compute_fans(shape)


def test_fans_from_explicit_axes_as_keras():
    real_keras()
    from keras.src.initializers.random_initializers import compute_fans

    for shape, inputs, outputs in [((4, 5, 6), [0], [1, 2]), ((4, 5, 6), [0, 1], [2]),
                                   ((2, 3, 4, 5), [1, 2], [-1])]:
        assert initializers.compute_fans(shape, inputs, outputs) == compute_fans(
            shape, inputs, outputs)
    # EinsumDense's kernel (in, heads, size): fan_in 16, fan_out 4 * 8
    values = initializers.VarianceScaling(1.0, "fan_out", "uniform", seed=0, input_axes=[0],
                                          output_axes=[1, 2])((16, 4, 8))
    assert np.abs(values).max() <= math.sqrt(3.0 / 32) and np.abs(values).max() > 0.9 * math.sqrt(
        3.0 / 32)


@pytest.mark.parametrize("layer, fan_in, fan_out", [
    ("Conv1D(6, 5)", 5 * 4, 5 * 6),
    ("Conv2D(6, (3, 2), data_format='channels_last')", 3 * 2 * 4, 3 * 2 * 6),
    ("Conv2D(6, (3, 2), data_format='channels_first')", 3 * 2 * 4, 3 * 2 * 6),
    ("Conv2DTranspose(6, 3)", 3 * 3 * 6, 3 * 3 * 4),  # kernel (kh, kw, filters, in)
])
def test_conv_kernels_get_keras_fans(layer, fan_in, fan_out):
    """The kernel of a layer built on 4 channels has Keras's shape whatever the data_format,
    so Glorot's limit follows Keras's fans, and a seeded kernel equals Keras's."""
    keras = real_keras()
    from kiln import keras as kk

    def build(K):
        made = eval(f"K.layers.{layer[:-1]}, "
                    "kernel_initializer=K.initializers.GlorotUniform(seed=3))")
        rank = 1 if "1D" in layer else 2
        channels_first = "channels_first" in layer
        shape = (4,) + (9,) * rank if channels_first else (9,) * rank + (4,)
        K.Sequential([K.Input(shape), made])
        return made

    ours, theirs = build(kk), build(keras)
    assert ours.kernel.shape == tuple(theirs.kernel.shape)
    limit = math.sqrt(6.0 / (fan_in + fan_out))
    kernel = ours.get_weights()[0]
    assert np.abs(kernel).max() <= limit and np.abs(kernel).max() > 0.8 * limit
    assert_keras_values(kernel, theirs.get_weights()[0])


def test_orthogonal_is_orthogonal_for_tall_wide_and_conv_shapes():
    keras = real_keras()
    for shape in [(40, 20), (20, 40), (3, 3, 4, 8)]:
        ours = initializers.Orthogonal(gain=2.0, seed=1)(shape)
        theirs = np.asarray(keras.initializers.Orthogonal(gain=2.0, seed=1)(shape))
        for values in (ours, theirs):
            matrix = values.reshape(-1, shape[-1])
            small = matrix.T @ matrix if matrix.shape[0] >= matrix.shape[1] else matrix @ matrix.T
            np.testing.assert_allclose(small, 4.0 * np.eye(len(small)), atol=1e-4)
        # the same normal draw and QR as Keras (numpy's in float64, XLA's in float32)
        np.testing.assert_allclose(ours, theirs, atol=2e-5)
    with pytest.raises(ValueError, match=r"Orthogonal.*two-dimensional.*\(3,\)"):
        initializers.Orthogonal()((3,))


def test_seeds_follow_keras():
    """As Keras 3: an instance returns the same values on every call, seeded or not; two
    instances with one int seed agree; unseeded instances (and the copies `clone()` makes
    from their config) each draw their own seed; the config keeps the seed given."""
    keras = real_keras()
    for module in (initializers, keras.initializers):
        for make in (lambda: module.GlorotUniform(), lambda: module.RandomNormal(seed=7)):
            made = make()
            np.testing.assert_array_equal(np.asarray(made((4, 5))), np.asarray(made((4, 5))))
        np.testing.assert_array_equal(np.asarray(module.HeNormal(seed=5)((6, 3))),
                                      np.asarray(module.HeNormal(seed=5)((6, 3))))
        first, second = module.RandomUniform(), module.RandomUniform()
        assert not np.array_equal(np.asarray(first((4, 5))), np.asarray(second((4, 5))))
        assert not np.array_equal(np.asarray(first((4, 5))), np.asarray(first.clone()((4, 5))))
        assert first.get_config()["seed"] is None and isinstance(first.seed, int)
        assert module.RandomUniform(seed=3).get_config()["seed"] == 3


def test_random_seed_reproduces_unseeded_draws():
    initializers.set_random_seed(11)
    first = initializers.GlorotUniform()((5, 5))
    initializers.set_random_seed(11)
    np.testing.assert_array_equal(initializers.GlorotUniform()((5, 5)), first)


@pytest.mark.parametrize("make", [
    lambda m: m.RandomNormal(mean=1, stddev=2), lambda m: m.RandomNormal(stddev=0.001, seed=4),
    lambda m: m.RandomUniform(minval=-0.2, maxval=0.1, seed=3), lambda m: m.RandomUniform(),
    lambda m: m.TruncatedNormal(mean=1.0, stddev=0.5),
    lambda m: m.VarianceScaling(scale=2.0, mode="fan_out", distribution="uniform"),
    lambda m: m.VarianceScaling(distribution="normal", seed=2),
    lambda m: m.VarianceScaling(input_axes=[0], output_axes=[1, 2]),
    lambda m: m.GlorotUniform(seed=1), lambda m: m.GlorotNormal(), lambda m: m.LecunNormal(),
    lambda m: m.LecunUniform(), lambda m: m.HeUniform(), lambda m: m.HeNormal(seed=0),
    lambda m: m.Orthogonal(gain=2.0), lambda m: m.Orthogonal(seed=5),
    lambda m: m.glorot_uniform(seed=0), lambda m: m.he_normal(), lambda m: m.orthogonal(),
])
def test_configs_equal_keras_both_ways(make):
    keras = real_keras()
    ours = initializers.serialize(make(initializers))
    theirs = keras.initializers.serialize(make(keras.initializers))
    assert ours == theirs
    again = initializers.get(theirs)  # and Keras's config makes the same initializer here
    assert type(again) is type(make(initializers))
    assert initializers.serialize(again) == ours
    assert keras.initializers.serialize(keras.initializers.deserialize(ours)) == theirs


@pytest.mark.parametrize("dtype", ["float16", "float64"])
def test_float_dtypes_as_asked(dtype):
    values = initializers.HeUniform(seed=0)((30, 20), dtype=dtype)
    assert values.dtype == np.dtype(dtype)
    assert np.abs(values).max() <= math.sqrt(6.0 / 30) * (1 + 1e-3)


@pytest.mark.parametrize("make, keras_error, pattern", [
    (lambda m: m.VarianceScaling(mode="fan_sum"), "mode", r"VarianceScaling.*mode.*fan_sum"),
    (lambda m: m.VarianceScaling(distribution="gamma"), "distribution",
     r"VarianceScaling.*distribution.*gamma"),
    (lambda m: m.VarianceScaling(scale=0), "scale", r"VarianceScaling.*scale.*positive"),
    (lambda m: m.VarianceScaling(scale=-1.0), "scale", r"VarianceScaling.*scale.*positive"),
    (lambda m: m.RandomNormal(seed="a"), "seed", r"RandomNormal.*seed.*'a'"),
    (lambda m: m.RandomNormal()((2,), dtype="int32"), "int32", r"RandomNormal.*dtype.*int32"),
    (lambda m: m.GlorotUniform()((2, 2), dtype="int32"), "int32",
     r"GlorotUniform.*dtype.*int32"),
])
def test_bad_arguments_raise_keras_error_naming_initializer(make, keras_error, pattern):
    keras = real_keras()
    with pytest.raises(ValueError, match=keras_error):
        make(keras.initializers)
    with pytest.raises(ValueError, match=pattern):
        make(initializers)


def test_negative_stddev_is_accepted_as_keras_does():
    """Keras 3 checks no sign: a negative deviation draws the same (symmetric) law."""
    keras = real_keras()
    theirs = np.asarray(keras.initializers.RandomNormal(stddev=-0.5, seed=1)((100, 100)))
    ours = initializers.RandomNormal(stddev=-0.5, seed=1)((100, 100))
    assert ours.std() == pytest.approx(0.5, rel=0.03)
    assert theirs.std() == pytest.approx(0.5, rel=0.03)
