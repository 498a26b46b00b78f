"""The layer options the Keras applications need, against real Keras 3: Rescaling with one
scale (and offset) per channel (EfficientNet's 1 / std per color) trains like Keras in both
data formats; Dropout with a noise_shape (EfficientNet's stochastic depth, (None, 1, 1, 1))
predicts like Keras, has Keras's config, and drops whole samples while training (its mask
statistics are tested in tests/ops/test_ops_broadcast_dropout.py)."""

import numpy as np
import pytest
from keras_oracle import check_against_keras

from kiln import keras as kk

pytestmark = [
    pytest.mark.usefixtures("kiln_keras_env"),
    pytest.mark.filterwarnings("ignore:__array__ implementation doesn't accept a copy keyword"
                               ":DeprecationWarning"),
]

CL, CF = "channels_last", "channels_first"


def conv_model(layer, data_format=CL):
    shape = (5, 5, 2) if data_format == CL else (2, 5, 5)

    def build(K):
        inputs = K.Input(shape)
        x = K.layers.Conv2D(3, 3, activation="relu", data_format=data_format)(inputs)
        x = layer(K)(x)
        x = K.layers.Flatten()(x)
        return K.Model(inputs, K.layers.Dense(4, activation="softmax")(x))

    return build


@pytest.fixture
def image_format():
    """Sets the global image data format on both sides (Keras's Rescaling reads it when it
    runs, to reshape a per-channel scale onto channels_first); restores it after."""
    import keras

    def set_format(data_format):
        kk.backend.set_image_data_format(data_format)
        keras.backend.set_image_data_format(data_format)

    yield set_format
    set_format(CL)


@pytest.mark.parametrize("data_format", [CL, CF])
@pytest.mark.parametrize("offset", [0.0, [0.5, -0.25, 1.0]])
def test_per_channel_rescaling_trains_like_keras(data_format, offset, image_format):
    image_format(data_format)

    def layer(K):
        return K.layers.Rescaling([0.5, 2.0, -1.5], offset=offset)

    kiln_model, keras_model = check_against_keras(conv_model(layer, data_format),
                                                  optimizers=["sgd"])
    assert kiln_model.layers[2].get_config() == keras_model.layers[2].get_config()


@pytest.mark.parametrize("noise_shape", [(None, 1, 1, 1), (None, 1, 1, 3)])
def test_dropout_with_noise_shape_predicts_like_keras(noise_shape):
    def layer(K):
        return K.layers.Dropout(0.4, noise_shape=noise_shape, seed=3)

    kiln_model, keras_model = check_against_keras(conv_model(layer), train=False)
    assert kiln_model.layers[2].get_config() == keras_model.layers[2].get_config()


def test_dropout_with_noise_shape_drops_whole_samples_in_training():
    inputs = kk.Input((4, 4, 2))
    x = kk.layers.Dropout(0.5, noise_shape=(None, 1, 1, 1), seed=1)(inputs)
    model = kk.Model(inputs, kk.layers.Flatten()(x))
    model.compile(optimizer="sgd", loss="mse")
    x = np.ones((64, 4, 4, 2), np.float32)
    # no weights: the loss is mean((dropout(x) - 0)^2) = the share of kept samples times 4
    loss = model.evaluate(x, np.zeros((64, 32), np.float32), verbose=0)
    assert loss == pytest.approx(1.0)  # inference: the identity
    history = model.fit(x, np.zeros((64, 32), np.float32), epochs=1, batch_size=64, verbose=0)
    kept_share = history.history["loss"][0] / 4.0
    assert kept_share * 64 == pytest.approx(round(kept_share * 64), abs=1e-4)  # whole samples
    assert 0.25 < kept_share < 0.75


@pytest.mark.parametrize("build, message", [
    (lambda: kk.layers.Dropout(0.1, noise_shape="x"), "argument noise_shape must be a tuple"),
    (lambda: kk.layers.Dropout(0.1, noise_shape=(None, 0)), "argument noise_shape"),
    (lambda: kk.layers.Dropout(0.1, noise_shape=(None, 1))(kk.Input((4, 4, 2))),
     r"noise_shape \(None, 1\) must have one entry per axis"),
    (lambda: kk.layers.Dropout(0.1, noise_shape=(None, 2, 1, 1))(kk.Input((4, 4, 2))),
     r"entry 1 must be None, 1 or the input's size 4"),
    (lambda: kk.layers.Rescaling("a"), "argument scale must be a float or an array"),
])
def test_bad_arguments_name_the_layer_and_argument(build, message):
    with pytest.raises(ValueError, match=message):
        build()
