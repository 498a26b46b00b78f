"""keras.random inside a layer's call(): the keras.io VAE's Sampling layer and a dropout in a
custom layer, planned as draw ops. The draws are new at every step (two steps differ), come
from the layer's SeedGenerator as Keras's do (predict and fit equal real Keras on JAX from the
same weights), repeat under keras.utils.set_random_seed, and the gradients with respect to
z_mean / z_log_var are the numpy ones for the epsilon drawn."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parents[1]))  # the shared real-Keras helper

import numpy as np  # noqa: E402
import pytest  # noqa: E402
from keras_oracle import real_keras  # noqa: E402

from kiln import keras  # noqa: E402
from kiln.ops.random_draw import draw_array  # noqa: E402


def sampling_layer(K, seed=1337):
    class Sampling(K.layers.Layer):
        """keras.io's VAE: z = z_mean + exp(z_log_var / 2) * epsilon."""

        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            self.seed_generator = K.random.SeedGenerator(seed)

        def call(self, inputs):
            z_mean, z_log_var = inputs
            batch, dim = K.ops.shape(z_mean)[0], K.ops.shape(z_mean)[1]
            epsilon = K.random.normal(shape=(batch, dim), seed=self.seed_generator)
            return z_mean + K.ops.exp(0.5 * z_log_var) * epsilon

    return Sampling()


def encoder(K, seed=1337):
    """x -> Dense z_mean, Dense z_log_var -> Sampling: z (so z_mean / z_log_var learn)."""
    inputs = K.Input((5,))
    z_mean = K.layers.Dense(3, name="z_mean")(inputs)
    z_log_var = K.layers.Dense(3, name="z_log_var")(inputs)
    sampling = sampling_layer(K, seed)
    return K.Model(inputs, sampling([z_mean, z_log_var])), sampling


DATA = np.random.default_rng(0).normal(size=(8, 5)).astype(np.float32)
TARGET = np.random.default_rng(1).normal(size=(8, 3)).astype(np.float32)


def epsilon(seed, counter, shape=(8, 3)):
    return draw_array(shape, "normal", 0.0, 1.0, seed, counter)


def test_sampling_predicts_with_new_noise_equal_to_keras():
    K = real_keras()
    ours, sampling = encoder(keras)
    theirs, _ = encoder(K)
    theirs.set_weights(ours.get_weights())
    first, second = ours.predict(DATA, verbose=0), ours.predict(DATA, verbose=0)
    assert not np.allclose(first, second)  # a new epsilon at each run
    np.testing.assert_allclose(first, theirs.predict(DATA, verbose=0), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(second, theirs.predict(DATA, verbose=0), rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(sampling.seed_generator.state, [1337, 2])


def test_sampling_gradients_are_numpy_ones_for_the_drawn_epsilon():
    model, sampling = encoder(keras, seed=21)
    model.compile(keras.optimizers.SGD(0.1), "mse")
    kernel_m, bias_m, kernel_v, bias_v = model.get_weights()
    counter = int(sampling.seed_generator.state[1])
    model.train_on_batch(DATA, TARGET)
    eps = epsilon(21, counter)
    z_mean, z_log_var = DATA @ kernel_m + bias_m, DATA @ kernel_v + bias_v
    z = z_mean + np.exp(0.5 * z_log_var) * eps
    grad_z = 2 * (z - TARGET) / z.size  # mean squared error
    grad_mean, grad_log_var = grad_z, grad_z * 0.5 * np.exp(0.5 * z_log_var) * eps
    expected = [kernel_m - 0.1 * DATA.T @ grad_mean, bias_m - 0.1 * grad_mean.sum(0),
                kernel_v - 0.1 * DATA.T @ grad_log_var, bias_v - 0.1 * grad_log_var.sum(0)]
    for ours, theirs in zip(model.get_weights(), expected, strict=True):
        np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-6)
    assert int(sampling.seed_generator.state[1]) == counter + 1


def test_sampling_trains_as_keras():
    K = real_keras()
    ours, _ = encoder(keras)
    theirs, _ = encoder(K)
    theirs.set_weights(ours.get_weights())
    for model, k in ((ours, keras), (theirs, K)):
        model.compile(k.optimizers.SGD(0.1), "mse")
    losses = [[m.fit(DATA, TARGET, batch_size=8, epochs=1, shuffle=False,
                     verbose=0).history["loss"][0] for _ in range(2)] for m in (ours, theirs)]
    np.testing.assert_allclose(losses[0], losses[1], rtol=1e-5)
    for a, b in zip(ours.get_weights(), theirs.get_weights(), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_two_steps_draw_differently_and_set_random_seed_repeats_a_run():
    def run():
        keras.utils.set_random_seed(3)
        model, _ = encoder(keras, seed=None)  # the generator's seed comes from the run's
        model.compile(keras.optimizers.SGD(0.0), "mse")  # weights stay: only noise changes
        losses = [float(model.train_on_batch(DATA, TARGET)) for _ in range(2)]
        return losses, model.predict(DATA, verbose=0)

    (losses, predicted), (losses_again, predicted_again) = run(), run()
    assert losses[0] != losses[1]
    assert losses == losses_again
    np.testing.assert_array_equal(predicted, predicted_again)


def test_int_seed_draws_the_same_values_every_step_as_keras():
    class Noise(keras.layers.Layer):
        def call(self, x):
            return x + keras.random.uniform(keras.ops.shape(x), minval=-1.0, maxval=1.0,
                                            seed=5)

    inputs = keras.Input((2, 3))
    model = keras.Model(inputs, Noise()(inputs))
    zeros = np.zeros((4, 2, 3), np.float32)
    first = model.predict(zeros, verbose=0)
    np.testing.assert_array_equal(first, model.predict(zeros, verbose=0))
    np.testing.assert_array_equal(first, keras.random.uniform((4, 2, 3), -1.0, 1.0, seed=5))


class RandomDropout(keras.layers.Layer):
    """keras.io's custom-layer dropout: keras.random.dropout with the layer's generator."""

    def __init__(self, rate, **kwargs):
        super().__init__(**kwargs)
        self.rate = rate
        self.seed_generator = keras.random.SeedGenerator(77)

    def call(self, inputs):
        return keras.random.dropout(inputs, self.rate, seed=self.seed_generator)


def test_dropout_in_a_custom_layer_masks_forward_and_backward():
    inputs = keras.Input((4, 6))
    dense = keras.layers.Dense(6, name="dense")
    layer = RandomDropout(0.4)
    model = keras.Model(inputs, layer(dense(inputs)))
    x = np.random.default_rng(2).normal(size=(16, 4, 6)).astype(np.float32)
    kernel, bias = dense.get_weights()
    dense_out = x @ kernel + bias
    # the first run's mask: the eager dropout of ones with a generator in the same state
    mask = keras.random.dropout(np.ones((16, 4, 6), np.float32), 0.4,
                                seed=keras.random.SeedGenerator(77))
    out = model.predict(x, verbose=0)
    np.testing.assert_allclose(out, dense_out * mask, rtol=1e-5, atol=1e-6)
    assert abs((out == 0).mean() - 0.4) < 0.1
    assert not np.array_equal(out != 0, model.predict(x, verbose=0) != 0)
    # training: the gradient reaches the kernel only through kept entries
    model.compile(keras.optimizers.SGD(0.5), "mse")
    y = np.zeros_like(x)
    mask = draw_array((16, 4, 6), "keep_mask", 0.6, 0.0, 77,
                      int(layer.seed_generator.state[1]))
    model.train_on_batch(x, y)
    grad_out = 2 * (dense_out * mask - y) / y.size * mask
    expected = kernel - 0.5 * np.einsum("nti,nto->io", x, grad_out)
    np.testing.assert_allclose(dense.get_weights()[0], expected, rtol=1e-5, atol=1e-6)


def test_draws_inside_a_model_need_a_batch_axis():
    class Bad(keras.layers.Layer):
        def call(self, x):
            return x + keras.random.normal((4, 3), seed=1)

    with pytest.raises(NotImplementedError, match=r"keras.random.normal.*Bad.*first axis is "
                                                  r"the batch"):
        Bad()(keras.Input((3,)))


def test_eager_only_draws_are_refused_inside_a_model():
    class Shuffled(keras.layers.Layer):  # a constant array: no batch, a constant of the plan
        def call(self, x):
            return x + keras.random.shuffle(np.arange(3.0, dtype=np.float32))

    with pytest.raises(NotImplementedError, match="keras.random.shuffle .*inside a model"):
        Shuffled()(keras.Input((3,)))

    class Gamma(keras.layers.Layer):  # a tensor parameter
        def call(self, x):
            return x + keras.random.gamma((keras.ops.shape(x)[0], 3), alpha=x)

    with pytest.raises(NotImplementedError, match="keras.random.gamma .*tensor arguments"):
        Gamma()(keras.Input((3,)))


def test_build_draws_eagerly():
    class Scaled(keras.layers.Layer):
        def build(self, input_shape):
            self.scale = keras.random.uniform((input_shape[-1],), seed=4)

        def call(self, x):
            return x * self.scale

    inputs = keras.Input((3,))
    model = keras.Model(inputs, Scaled()(inputs))
    np.testing.assert_allclose(model.predict(np.ones((2, 3), np.float32), verbose=0),
                               np.tile(keras.random.uniform((3,), seed=4), (2, 1)), rtol=1e-6)


def test_draws_in_a_traced_loss_are_refused():
    def noisy_loss(y_true, y_pred):
        noise = keras.random.normal((8, 3), seed=1)
        return keras.ops.mean(keras.ops.square(y_pred - y_true + noise), axis=-1)

    inputs = keras.Input((5,))
    model = keras.Model(inputs, keras.layers.Dense(3)(inputs))
    with pytest.raises(NotImplementedError, match=r"keras.random.normal in loss 'noisy_loss'"):
        model.compile("sgd", noisy_loss)
        model.fit(DATA, TARGET, verbose=0)


def test_draws_follow_variable_sequence_lengths():
    class Noise(keras.layers.Layer):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            self.seed_generator = keras.random.SeedGenerator(3)

        def call(self, x):
            return x + keras.random.normal(keras.ops.shape(x), seed=self.seed_generator)

    inputs = keras.Input((None, 4))
    model = keras.Model(inputs, Noise()(inputs))
    assert model.output_shape == (None, None, 4)
    for counter, steps in enumerate((5, 9)):
        out = model.predict(np.zeros((2, steps, 4), np.float32), verbose=0)
        np.testing.assert_allclose(out, epsilon(3, counter, (2, steps, 4)), rtol=1e-6)
