"""SpatialDropout2D, GaussianNoise, GaussianDropout, AlphaDropout, ActivityRegularization,
Rescaling, Normalization (with adapt()) and Identity against real Keras 3 (JAX backend) through the
shared checker. The random layers are the identity in predict (compared with Keras) and their
training forward is random on both sides, so only inference is compared for them (their
training statistics are tested in tests/ops/test_ops_noise_rescaling.py); the others train."""

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
        x = layer(K, data_format)(x)
        x = K.layers.Flatten(data_format=data_format)(x)
        return K.Model(inputs, K.layers.Dense(3, activation="softmax")(x))
    return build


RANDOM = {
    "spatial-dropout": lambda K, f: K.layers.SpatialDropout2D(0.3, data_format=f, seed=1),
    "gaussian-noise": lambda K, f: K.layers.GaussianNoise(0.2, seed=1),
    "gaussian-dropout": lambda K, f: K.layers.GaussianDropout(0.3, seed=1),
    "alpha-dropout": lambda K, f: K.layers.AlphaDropout(0.3, seed=1),
}
TRAINED = {
    "identity": lambda K, f: K.layers.Identity(),
    "activity-regularization": lambda K, f: K.layers.ActivityRegularization(l1=0.01, l2=0.02),
    "rescaling": lambda K, f: K.layers.Rescaling(0.5, offset=-0.25),
    "normalization-given": lambda K, f: K.layers.Normalization(
        axis=-1, mean=[0.1, 0.2, 0.3] if f == CL else 0.2,
        variance=[1.5, 0.5, 2.0] if f == CL else 0.7),
    "normalization-invert": lambda K, f: K.layers.Normalization(mean=0.5, variance=4.0,
                                                                invert=True),
    "random-layers-with-rate-0": lambda K, f: K.layers.GaussianNoise(0.0),
}


@pytest.mark.parametrize("data_format", [CL, CF])
@pytest.mark.parametrize("layer", list(RANDOM))
def test_random_layer_predicts_like_keras(layer, data_format):
    kiln_model, keras_model = check_against_keras(conv_model(RANDOM[layer], data_format),
                                                  train=False)
    assert kiln_model.layers[2].get_config() == keras_model.layers[2].get_config()


@pytest.mark.parametrize("data_format", [CL, CF])
@pytest.mark.parametrize("layer", list(TRAINED))
def test_layer_trains_like_keras(layer, data_format):
    # the reported loss holds the activity penalty: it is not the crossentropy alone
    kiln_model, keras_model = check_against_keras(
        conv_model(TRAINED[layer], data_format), optimizers=["sgd"],
        training_forward=layer != "activity-regularization")
    assert kiln_model.layers[2].get_config() == keras_model.layers[2].get_config()


def test_random_layers_train_the_rest_of_the_model():
    def build(K):
        inputs = K.Input((6, 6, 2))
        x = K.layers.Conv2D(4, 3)(inputs)
        x = K.layers.SpatialDropout2D(0.5, seed=3)(x)
        x = K.layers.GaussianDropout(0.2, seed=3)(x)
        x = K.layers.AlphaDropout(0.1, seed=3)(x)
        x = K.layers.GaussianNoise(0.1, seed=3)(x)
        x = K.layers.GlobalAveragePooling2D()(x)
        return K.Model(inputs, K.layers.Dense(3, activation="softmax")(x))

    kk.backend.clear_session()
    model = build(kk)
    model.compile(optimizer="sgd", loss="categorical_crossentropy")
    rng = np.random.default_rng(0)
    x = rng.normal(size=(32, 6, 6, 2)).astype(np.float32)
    y = np.eye(3, dtype=np.float32)[rng.integers(0, 3, 32)]
    before = model.get_weights()
    losses = model.fit(x, y, epochs=3, batch_size=16, verbose=0).history["loss"]
    assert all(np.isfinite(losses))
    assert not np.allclose(before[0], model.get_weights()[0])
    np.testing.assert_array_equal(model.predict(x, verbose=0), model.predict(x, verbose=0))


@pytest.mark.parametrize("axis", [-1, None])
@pytest.mark.parametrize("data_format", [CL, CF])
def test_normalization_adapt_matches_keras(data_format, axis):
    # a layer without data_format on a model input reads it in the default image format
    kk.backend.set_image_data_format(data_format)
    rng = np.random.default_rng(5)
    shape = (6, 6, 3) if data_format == CL else (3, 6, 6)
    data = (rng.normal(size=(40, *shape)) * [2.0] + 1.5).astype(np.float32)

    def build(K):
        norm = K.layers.Normalization(axis=axis)
        norm.adapt(data)
        inputs = K.Input(shape)
        x = norm(inputs)
        x = K.layers.Conv2D(2, 3, data_format=data_format)(x)
        x = K.layers.Flatten(data_format=data_format)(x)
        return K.Model(inputs, K.layers.Dense(3, activation="softmax")(x))

    kiln_model, keras_model = check_against_keras(build, optimizers=["sgd"])
    for kiln_weight, keras_weight in zip(kiln_model.layers[1].get_weights(),
                                         keras_model.layers[1].get_weights()):
        np.testing.assert_allclose(kiln_weight, keras_weight, rtol=1e-5, atol=1e-6)
    assert [w.path for w in kiln_model.layers[1].weights] == [
        w.path for w in keras_model.layers[1].weights]


@pytest.mark.parametrize("build, message", [
    (lambda: kk.layers.GaussianNoise(-0.1), "argument stddev must be a float in"),
    (lambda: kk.layers.GaussianDropout(1.5), "argument rate must be a float in"),
    (lambda: kk.layers.AlphaDropout(1.0), r"AlphaDropout.*argument rate must be a float in"),
    (lambda: kk.layers.AlphaDropout(0.1, noise_shape=(None, 1)), "argument noise_shape"),
    (lambda: kk.layers.SpatialDropout2D(1.0), r"argument rate must be a float in \[0, 1\)"),
    (lambda: kk.layers.ActivityRegularization(l1=-1), "argument l1"),
    (lambda: kk.layers.Rescaling([1.0, "a"]), "argument scale must be a float or an array"),
    (lambda: kk.layers.Normalization(axis=(1, 2)), "several axes are not supported"),
    (lambda: kk.layers.Normalization(mean=1.0), "must be given together"),
])
def test_bad_arguments_name_the_layer_and_argument(build, message):
    with pytest.raises(ValueError, match=message):
        build()
