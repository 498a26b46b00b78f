"""keras.io's Variational AutoEncoder (its Sampling layer drawing epsilon with
`keras.random.normal` from a SeedGenerator, a convolutional encoder and decoder), narrower,
against real Keras 3 (JAX), with the KL term added two ways:

- add_loss: the Sampling layer adds the KL term in call(); the reconstruction is a compiled
  loss (functional model of an encoder and a decoder model);
- compute_loss: a VAE model subclass returns (z_mean, z_log_var, reconstruction) and its
  compute_loss override computes keras.io's total loss (reconstruction summed per image plus
  KL), compiled with no loss and fitted on x alone.

kiln's draws inside a model follow Keras's JAX threefry stream for a SeedGenerator with an int
seed (docs/random.md), so predict and two training steps from the same weights must give
Keras's losses and weights."""

import numpy as np
import pytest
from keras_oracle import ATOL, RTOL, assert_weights_close, build_pair, real_keras

from kiln import keras as kk

LATENT = 2


def sampling(K, add_kl):
    class Sampling(K.layers.Layer):
        """Uses (z_mean, z_log_var) to sample z, the vector encoding a digit."""

        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            self.seed_generator = K.random.SeedGenerator(1337)

        def call(self, inputs):
            z_mean, z_log_var = inputs
            batch = K.ops.shape(z_mean)[0]
            dim = K.ops.shape(z_mean)[1]
            epsilon = K.random.normal(shape=(batch, dim), seed=self.seed_generator)
            if add_kl:
                kl_loss = -0.5 * (1 + z_log_var - K.ops.square(z_mean) - K.ops.exp(z_log_var))
                self.add_loss(K.ops.mean(K.ops.sum(kl_loss, axis=1)))
            return z_mean + K.ops.exp(0.5 * z_log_var) * epsilon

    return Sampling(name="sampling")


def encoder_decoder(K, add_kl):
    encoder_inputs = K.Input(shape=(28, 28, 1))
    x = K.layers.Conv2D(4, 3, activation="relu", strides=2, padding="same")(encoder_inputs)
    x = K.layers.Conv2D(8, 3, activation="relu", strides=2, padding="same")(x)
    x = K.layers.Flatten()(x)
    x = K.layers.Dense(16, activation="relu")(x)
    z_mean = K.layers.Dense(LATENT, name="z_mean")(x)
    z_log_var = K.layers.Dense(LATENT, name="z_log_var")(x)
    z = sampling(K, add_kl)([z_mean, z_log_var])
    encoder = K.Model(encoder_inputs, [z_mean, z_log_var, z], name="encoder")

    latent_inputs = K.Input(shape=(LATENT,))
    x = K.layers.Dense(7 * 7 * 8, activation="relu")(latent_inputs)
    x = K.layers.Reshape((7, 7, 8))(x)
    x = K.layers.Conv2DTranspose(8, 3, activation="relu", strides=2, padding="same")(x)
    x = K.layers.Conv2DTranspose(4, 3, activation="relu", strides=2, padding="same")(x)
    decoder_outputs = K.layers.Conv2DTranspose(1, 3, activation="sigmoid", padding="same")(x)
    decoder = K.Model(latent_inputs, decoder_outputs, name="decoder")
    return encoder, decoder


def vae_with_add_loss(K):
    encoder, decoder = encoder_decoder(K, add_kl=True)
    inputs = K.Input(shape=(28, 28, 1))
    return K.Model(inputs, decoder(encoder(inputs)[2]), name="vae")


def vae_with_compute_loss(K):
    encoder, decoder = encoder_decoder(K, add_kl=False)

    class VAE(K.Model):
        def __init__(self, encoder, decoder, **kwargs):
            super().__init__(**kwargs)
            self.encoder = encoder
            self.decoder = decoder

        def call(self, x):
            z_mean, z_log_var, z = self.encoder(x)
            return [z_mean, z_log_var, self.decoder(z)]

        def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None,
                         training=True):
            z_mean, z_log_var, reconstruction = y_pred
            reconstruction_loss = K.ops.mean(K.ops.sum(
                K.losses.binary_crossentropy(x, reconstruction), axis=(1, 2)))
            kl_loss = -0.5 * (1 + z_log_var - K.ops.square(z_mean) - K.ops.exp(z_log_var))
            kl_loss = K.ops.mean(K.ops.sum(kl_loss, axis=1))
            return reconstruction_loss + kl_loss

    return VAE(encoder, decoder, name="vae")


def digits(count=8, seed=0):
    return np.random.default_rng(seed).random((count, 28, 28, 1)).astype(np.float32)


def check_two_steps(kiln_model, keras_model, x, y):
    keras = real_keras()
    # (SGD: Adam's first steps move weights with near-zero gradients by a full learning
    # rate, in a direction float32 rounding decides)
    kiln_model.compile(optimizer=kk.optimizers.SGD(learning_rate=0.002),
                       loss=None if y is None else "binary_crossentropy")
    keras_model.compile(optimizer=keras.optimizers.SGD(learning_rate=0.002),
                        loss=None if y is None else "binary_crossentropy")
    losses = []
    for step in range(2):
        kiln_loss = kiln_model.fit(x, y, batch_size=len(x), shuffle=False,
                                   verbose=0).history["loss"][0]
        keras_loss = keras_model.fit(x, y, batch_size=len(x), shuffle=False,
                                     verbose=0).history["loss"][0]
        assert kiln_loss == pytest.approx(keras_loss, rel=RTOL, abs=ATOL), step
        assert_weights_close(kiln_model, keras_model, f"after step {step + 1}")
        losses.append(kiln_loss)
    return losses


def test_vae_with_the_kl_term_added_in_the_sampling_layer():
    kiln_model, keras_model, _ = build_pair(vae_with_add_loss)
    x = digits()
    np.testing.assert_allclose(kiln_model.predict(x, verbose=0),
                               keras_model.predict(x, verbose=0), rtol=RTOL, atol=ATOL)
    check_two_steps(kiln_model, keras_model, x, x)


def test_vae_with_a_compute_loss_override():
    kiln_model, keras_model, _ = build_pair(vae_with_compute_loss, input_shapes=(28, 28, 1))
    # Keras built its subclass by calling it on data, which drew once: start its draws anew
    state = keras_model.encoder.get_layer("sampling").seed_generator.state
    state.assign(np.array([1337, 0], dtype=state.dtype))
    x = digits(seed=1)
    for kiln_out, keras_out in zip(kiln_model.predict(x, verbose=0),
                                   keras_model.predict(x, verbose=0), strict=True):
        np.testing.assert_allclose(kiln_out, keras_out, rtol=RTOL, atol=ATOL)
    losses = check_two_steps(kiln_model, keras_model, x, None)
    assert losses[1] < losses[0]
