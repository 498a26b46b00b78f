"""keras.random eagerly against real Keras 3 on JAX: for an int seed and for a SeedGenerator
made with an int, normal / uniform / truncated_normal / dropout / randint / shuffle /
categorical give Keras-on-JAX's numbers (the threefry stream and jax.random's algorithms);
gamma / beta / binomial (numpy's samplers) give Keras's distributions, checked by their
moments with tolerances a wrong parameterization fails."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parents[1]))  # the shared real-Keras helper

import numpy as np  # noqa: E402
import pytest  # noqa: E402
from keras_oracle import real_keras  # noqa: E402

from kiln import keras  # noqa: E402


@pytest.fixture(scope="module")
def K():
    return real_keras()


@pytest.mark.parametrize("function, kwargs", [
    ("normal", {}), ("normal", {"mean": 2.0, "stddev": 3.0}),
    ("uniform", {}), ("uniform", {"minval": -2.0, "maxval": 5.0}),
    ("truncated_normal", {}), ("truncated_normal", {"mean": -1.0, "stddev": 0.5})])
@pytest.mark.parametrize("seed", [0, 7, 2**31 + 5])
def test_float_draws_equal_keras_for_an_int_seed(K, function, kwargs, seed):
    ours = getattr(keras.random, function)((40, 30), seed=seed, **kwargs)
    theirs = np.asarray(getattr(K.random, function)((40, 30), seed=seed, **kwargs))
    assert ours.dtype == np.float32 and ours.shape == (40, 30)
    # uniform is bit for bit; erfinv may round its last bit differently from XLA's
    np.testing.assert_allclose(ours, theirs, rtol=2e-6, atol=2e-6)
    # an int seed draws the same values at every call
    np.testing.assert_array_equal(ours, getattr(keras.random, function)((40, 30), seed=seed,
                                                                        **kwargs))


def test_seed_generator_draws_keras_sequence(K):
    ours, theirs = keras.random.SeedGenerator(1337), K.random.SeedGenerator(1337)
    draws = []
    for function in ("normal", "uniform", "normal", "truncated_normal"):
        a = getattr(keras.random, function)((5, 4), seed=ours)
        b = np.asarray(getattr(K.random, function)((5, 4), seed=theirs))
        np.testing.assert_allclose(a, b, rtol=2e-6, atol=2e-6)
        draws.append(a)
    assert not np.array_equal(draws[0], draws[2])  # a new key at every draw
    np.testing.assert_array_equal(ours.state, np.asarray(theirs.state.numpy()))


@pytest.mark.parametrize("rate, noise_shape", [(0.3, None), (0.5, (1, 25)), (0.8, (20, 1))])
def test_dropout_equals_keras(K, rate, noise_shape):
    x = np.random.default_rng(0).normal(size=(20, 25)).astype(np.float32)
    ours = keras.random.dropout(x, rate, noise_shape=noise_shape, seed=3)
    theirs = np.asarray(K.random.dropout(x, rate, noise_shape=noise_shape, seed=3))
    np.testing.assert_array_equal(ours, theirs)
    kept = ours != 0
    assert abs(kept.mean() - (1 - rate)) < 0.15
    np.testing.assert_allclose(ours[kept], x[kept] / np.float32(1 - rate))
    np.testing.assert_array_equal(keras.random.dropout(x, 0.0, seed=3), x)
    np.testing.assert_array_equal(keras.random.dropout(x, 1.0, seed=3), np.zeros_like(x))


@pytest.mark.parametrize("minval, maxval", [(0, 10), (-7, 1000), (-5, 2**31 - 1)])
def test_randint_equals_keras(K, minval, maxval):
    ours = keras.random.randint((300,), minval, maxval, seed=4)
    theirs = np.asarray(K.random.randint((300,), minval, maxval, seed=4))
    assert ours.dtype == np.int32
    np.testing.assert_array_equal(ours, theirs)
    assert ours.min() >= minval and ours.max() < maxval


def test_randint_is_uniform():
    values = keras.random.randint((60000,), 0, 6, seed=11)
    counts = np.bincount(values, minlength=6) / values.size
    np.testing.assert_allclose(counts, 1 / 6, atol=0.01)


@pytest.mark.parametrize("shape, axis", [((20, 3), 0), ((20, 3), 1), ((4, 5, 6), -1)])
def test_shuffle_equals_keras(K, shape, axis):
    x = np.arange(np.prod(shape)).reshape(shape).astype(np.float32)
    ours = keras.random.shuffle(x, axis=axis, seed=9)
    np.testing.assert_array_equal(ours, np.asarray(K.random.shuffle(x, axis=axis, seed=9)))
    # a permutation of every vector along the axis (each on its own, as Keras on JAX)
    np.testing.assert_array_equal(np.sort(ours, axis=axis), x)
    assert not np.array_equal(ours, x)


def test_categorical_equals_keras_and_follows_softmax(K):
    logits = np.log(np.array([[0.1, 0.2, 0.7], [0.5, 0.25, 0.25]], np.float32))
    ours = keras.random.categorical(logits, 4000, seed=2)
    np.testing.assert_array_equal(ours, np.asarray(K.random.categorical(logits, 4000, seed=2)))
    assert ours.shape == (2, 4000) and ours.dtype == np.int32
    for row, probabilities in zip(ours, np.exp(logits), strict=True):
        np.testing.assert_allclose(np.bincount(row, minlength=3) / row.size, probabilities,
                                   atol=0.03)


def test_unseeded_draws_differ_and_repeat_under_set_random_seed():
    keras.utils.set_random_seed(5)
    first = [keras.random.normal((3, 4)), keras.random.uniform((3, 4))]
    keras.utils.set_random_seed(5)
    again = [keras.random.normal((3, 4)), keras.random.uniform((3, 4))]
    for a, b in zip(first, again, strict=True):
        np.testing.assert_array_equal(a, b)
    assert not np.array_equal(keras.random.normal((3, 4)), first[0])


def test_float_draw_statistics():
    n = (400, 500)
    normal = keras.random.normal(n, mean=1.5, stddev=2.0, seed=1)
    assert abs(normal.mean() - 1.5) < 0.02 and abs(normal.std() - 2.0) < 0.02
    uniform = keras.random.uniform(n, minval=-1.0, maxval=3.0, seed=1)
    assert uniform.min() >= -1.0 and uniform.max() < 3.0
    assert abs(uniform.mean() - 1.0) < 0.02 and abs(uniform.var() - 16 / 12) < 0.02
    truncated = keras.random.truncated_normal(n, mean=0.0, stddev=2.0, seed=1)
    assert np.abs(truncated).max() < 4.0
    # a standard normal truncated to [-2, 2] has standard deviation 0.8796
    assert abs(truncated.std() - 2.0 * 0.8796) < 0.01


def test_gamma_beta_binomial_moments():
    n = (200000,)
    gamma = keras.random.gamma(n, alpha=3.0, seed=1)
    assert gamma.dtype == np.float32 and gamma.min() > 0
    assert abs(gamma.mean() - 3.0) < 0.03 and abs(gamma.var() - 3.0) < 0.06
    beta = keras.random.beta(n, alpha=2.0, beta=5.0, seed=1)
    assert 0 < beta.min() and beta.max() < 1
    assert abs(beta.mean() - 2 / 7) < 0.003
    assert abs(beta.var() - 10 / (49 * 8)) < 0.001
    binomial = keras.random.binomial(n, counts=10, probabilities=0.3, seed=1)
    assert binomial.dtype == np.float32
    assert set(np.unique(binomial)) <= set(range(11))
    assert abs(binomial.mean() - 3.0) < 0.02 and abs(binomial.var() - 2.1) < 0.03
    # per-element parameters broadcast to the shape; an int seed repeats its draw
    rows = keras.random.gamma((2, 50000), alpha=np.array([[1.0], [9.0]]), seed=3)
    np.testing.assert_allclose(rows.mean(axis=1), [1.0, 9.0], rtol=0.03)
    np.testing.assert_array_equal(rows, keras.random.gamma((2, 50000),
                                                           alpha=np.array([[1.0], [9.0]]),
                                                           seed=3))
