"""keras.random.shuffle and keras.random.categorical inside a layer's call(), planned as
kernels (ShuffleOp, CategoricalOp): new values at every step from the layer's SeedGenerator,
the eager values of the same key (Keras-on-JAX's: real Keras predicts the same), repeated
under keras.utils.set_random_seed; the shuffle's gradient is the inverse permutation of the
output gradient, the categorical sample gives its logits none."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parents[1]))  # the shared real-Keras helper

import numpy as np  # noqa: E402
import pytest  # noqa: E402
from keras_oracle import real_keras  # noqa: E402

from kiln import keras  # noqa: E402
from kiln.keras.random.seed_generator import SeedGenerator  # noqa: E402


def random_layer(K, draw, seed=3):
    """A layer returning `draw(x, seed_generator)` (seed None: the generator takes its seed
    from the run's)."""

    class Random(K.layers.Layer):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            self.seed_generator = K.random.SeedGenerator(seed)

        def call(self, x):
            return draw(K, x, self.seed_generator)

    return Random()


def model_of(K, draw, input_shape, seed=3, batch_size=None):
    inputs = K.Input(input_shape, batch_size=batch_size)
    return K.Model(inputs, random_layer(K, draw, seed)(inputs))


def shuffle_rows(K, x, seed):
    return K.random.shuffle(x, seed=seed)


def shuffle_last(K, x, seed):
    return K.random.shuffle(x, axis=-1, seed=seed)


def categorical(K, x, seed):
    return K.random.categorical(x, 4, seed=seed)


CASES = {"shuffle axis 0": (shuffle_rows, (3, 2)), "shuffle axis -1": (shuffle_last, (2, 5)),
         "categorical": (categorical, (6,))}


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_draw_in_a_layer_is_new_each_step_and_equals_eager_and_keras(case):
    draw, shape = CASES[case]
    x = np.random.default_rng(0).normal(size=(16, *shape)).astype(np.float32)
    model = model_of(keras, draw, shape)
    first, second = (model.predict(x, batch_size=16, verbose=0) for _ in range(2))
    assert not np.array_equal(first, second)
    generator = SeedGenerator(3)  # advances as the layer's does, one key per step
    for ours in (first, second):
        np.testing.assert_array_equal(ours, draw(keras, x, generator))
    # (JAX shuffles only arrays of a known size: a fixed batch)
    theirs = model_of(real_keras(), draw, shape, batch_size=16).predict(x, batch_size=16, verbose=0)
    np.testing.assert_array_equal(first, theirs)


def test_shuffle_in_a_layer_permutes_every_column_of_the_batch():
    x = np.arange(40 * 3, dtype=np.float32).reshape(40, 3)
    model = model_of(keras, shuffle_rows, (3,))
    for _ in range(2):
        out = model.predict(x, batch_size=40, verbose=0)
        for column in range(3):  # each column a permutation of its own values
            np.testing.assert_array_equal(np.sort(out[:, column]), x[:, column])
        assert not np.array_equal(out, x)


def test_categorical_in_a_layer_draws_with_the_softmax_probabilities():
    logits = np.tile(np.array([[0.0, 1.0, 2.0, -1.0, 0.5, 0.0]], np.float32), (2500, 1))
    model = model_of(keras, categorical, (6,))
    samples = model.predict(logits, batch_size=2500, verbose=0)
    assert samples.shape == (2500, 4)
    assert np.isin(samples, np.arange(6)).all()
    frequencies = np.bincount(samples.astype(int).ravel(), minlength=6) / samples.size
    probabilities = np.exp(logits[0]) / np.exp(logits[0]).sum()
    # 10000 samples: a standard deviation of at most 0.005 per frequency
    np.testing.assert_allclose(frequencies, probabilities, atol=0.025)


def test_set_random_seed_repeats_the_draws_of_a_run():
    x = np.random.default_rng(1).normal(size=(8, 6)).astype(np.float32)

    def run():
        keras.utils.set_random_seed(7)
        shuffled = model_of(keras, shuffle_rows, (6,), seed=None)
        sampled = model_of(keras, categorical, (6,), seed=None)
        return [m.predict(x, verbose=0) for m in (shuffled, sampled, shuffled, sampled)]

    first, again = run(), run()
    for a, b in zip(first, again, strict=True):
        np.testing.assert_array_equal(a, b)
    assert not np.array_equal(first[0], first[2])


def dense_then(draw, seed):
    """Input (4) -> Dense(3) -> the layer of `draw`."""
    inputs = keras.Input((4,))
    dense = keras.layers.Dense(3)
    random = random_layer(keras, draw, seed)
    model = keras.Model(inputs, random(dense(inputs)))
    model.compile(keras.optimizers.SGD(0.1), "mse")
    return model, random


DATA = np.random.default_rng(2).normal(size=(10, 4)).astype(np.float32)
TARGET = np.random.default_rng(3).normal(size=(10, 3)).astype(np.float32)


def sgd_step(kernel, bias, grad_h):
    return [kernel - 0.1 * DATA.T @ grad_h, bias - 0.1 * grad_h.sum(0)]


def test_shuffle_gradient_is_the_inverse_permutation_of_the_output_gradient():
    model, layer = dense_then(shuffle_rows, seed=11)
    kernel, bias = model.get_weights()
    assert int(layer.seed_generator.state[1]) == 0  # the step draws with the key (11, 0)
    model.train_on_batch(DATA, TARGET)
    h = DATA @ kernel + bias
    # the source of each output element: the eager shuffle of the indices with the same key
    source = shuffle_rows(keras, np.arange(h.size, dtype=np.float32).reshape(h.shape),
                          SeedGenerator(11)).astype(int)
    y = h.ravel()[source]
    grad_y = 2 * (y - TARGET) / y.size
    grad_h = np.zeros(h.size, np.float32)
    grad_h[source.ravel()] = grad_y.ravel()  # the inverse permutation
    for ours, expected in zip(model.get_weights(), sgd_step(kernel, bias,
                                                          grad_h.reshape(h.shape)),
                              strict=True):
        np.testing.assert_allclose(ours, expected, rtol=1e-5, atol=1e-6)


def test_categorical_sample_gives_its_logits_no_gradient():
    def logits_plus_sample(K, h, seed):  # the sample is a constant of the step
        return h + K.random.categorical(h, 3, seed=seed)

    model, _ = dense_then(logits_plus_sample, seed=13)
    kernel, bias = model.get_weights()
    model.train_on_batch(DATA, TARGET)
    h = DATA @ kernel + bias
    y = h + keras.random.categorical(h, 3, seed=SeedGenerator(13))
    grad_h = 2 * (y - TARGET) / y.size  # through the sum only
    for ours, expected in zip(model.get_weights(), sgd_step(kernel, bias, grad_h),
                              strict=True):
        np.testing.assert_allclose(ours, expected, rtol=1e-5, atol=1e-6)


def test_categorical_and_shuffle_arguments_are_checked_inside_a_model():
    inputs = keras.Input((3,))
    with pytest.raises(ValueError, match="categorical: inside a model argument num_samples"):
        random_layer(keras, lambda K, x, s: K.random.categorical(x, 0, seed=s))(inputs)
    with pytest.raises(ValueError, match="categorical: argument logits must be a 2D"):
        random_layer(keras, lambda K, x, s: K.random.categorical(x, 2, seed=s))(
            keras.Input((3, 2)))
    with pytest.raises(ValueError, match="shuffle: argument axis must be an int in"):
        random_layer(keras, lambda K, x, s: K.random.shuffle(x, axis=2, seed=s))(inputs)
