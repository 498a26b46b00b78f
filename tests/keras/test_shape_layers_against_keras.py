"""ZeroPadding2D, Cropping2D, UpSampling2D (nearest, bilinear), Reshape and Permute against
real Keras 3 (JAX backend) through the shared checker, in both data formats: configs,
predictions, losses and weights after training steps (the gradient flows back through each)."""

import pytest
from keras_oracle import check_against_keras

from kiln import keras as kk

pytestmark = [
    pytest.mark.usefixtures("kiln_keras_env"),
    pytest.mark.filterwarnings("ignore:__array__ implementation doesn't accept a copy keyword"
                               ":DeprecationWarning"),
]

CL, CF = "channels_last", "channels_first"

LAYERS = {
    "pad-1": lambda K, f: K.layers.ZeroPadding2D(data_format=f),
    "pad-rows-cols": lambda K, f: K.layers.ZeroPadding2D((2, 1), data_format=f),
    "pad-asym": lambda K, f: K.layers.ZeroPadding2D(((0, 1), (2, 0)), data_format=f),
    "crop": lambda K, f: K.layers.Cropping2D(1, data_format=f),
    "crop-asym": lambda K, f: K.layers.Cropping2D(((1, 0), (0, 2)), data_format=f),
    "up-nearest": lambda K, f: K.layers.UpSampling2D(data_format=f),
    "up-nearest-2x3": lambda K, f: K.layers.UpSampling2D((2, 3), data_format=f),
    "up-bilinear": lambda K, f: K.layers.UpSampling2D(2, data_format=f,
                                                      interpolation="bilinear"),
    "up-bilinear-3x2": lambda K, f: K.layers.UpSampling2D((3, 2), data_format=f,
                                                          interpolation="bilinear"),
    "permute-hw": lambda K, f: K.layers.Permute((2, 1, 3)),
    "permute-cycle": lambda K, f: K.layers.Permute((3, 1, 2)),
    "reshape-4d": lambda K, f: K.layers.Reshape((4, 4, 3) if f == CL else (3, 4, 4)),
}


@pytest.mark.parametrize("data_format", [CL, CF])
@pytest.mark.parametrize("layer", list(LAYERS))
def test_shape_layer_matches_keras(layer, data_format):
    shape = (4, 4, 2) if data_format == CL else (2, 4, 4)

    def build(K):
        inputs = K.Input(shape)
        x = K.layers.Conv2D(3, 1, activation="tanh", data_format=data_format)(inputs)
        x = LAYERS[layer](K, data_format)(x)
        x = K.layers.Conv2D(2, 2, data_format=data_format)(x)
        x = K.layers.Flatten(data_format=data_format)(x)
        return K.Model(inputs, K.layers.Dense(3, activation="softmax")(x))

    kiln_model, keras_model = check_against_keras(build, optimizers=["sgd"])
    assert kiln_model.layers[2].get_config() == keras_model.layers[2].get_config()


def test_reshape_between_dense_and_conv_matches_keras():
    """A decoder head: Dense -> Reshape to an image -> UpSampling2D -> Conv2D, and a Reshape
    with -1 of a flattened image."""
    def build(K):
        inputs = K.Input((5,))
        x = K.layers.Dense(18, activation="relu")(inputs)
        x = K.layers.Reshape((3, 3, 2))(x)
        x = K.layers.UpSampling2D(interpolation="bilinear")(x)
        x = K.layers.Conv2D(2, 3)(x)
        x = K.layers.Flatten()(x)
        x = K.layers.Reshape((4, -1))(x)
        x = K.layers.Permute((2, 1))(x)
        x = K.layers.Reshape((32,))(x)
        return K.Model(inputs, K.layers.Dense(3, activation="softmax")(x))

    check_against_keras(build, optimizers=["sgd", "adam"])


@pytest.mark.parametrize("build, message", [
    (lambda: kk.layers.ZeroPadding2D(-1), "argument padding must not be negative"),
    (lambda: kk.layers.ZeroPadding2D((1, 2, 3)), "argument padding must be an int"),
    (lambda: kk.layers.Cropping2D(-1), "argument cropping must not be negative"),
    (lambda: kk.layers.UpSampling2D(0), "argument size must be ints > 0"),
    (lambda: kk.layers.UpSampling2D(interpolation="bicubic"), "no oneDNN algorithm for"),
    (lambda: kk.layers.UpSampling2D(interpolation="cubic"), "argument interpolation"),
    (lambda: kk.layers.Reshape((2, -1, -1)), "argument target_shape"),
    (lambda: kk.layers.Permute((1, 3)), "argument dims must be a permutation"),
])
def test_bad_arguments_name_the_layer_and_argument(build, message):
    with pytest.raises(ValueError, match=message):
        build()


def test_reshape_of_wrong_size_is_rejected():
    inputs = kk.Input((4, 4, 2))
    with pytest.raises(ValueError, match="Reshape 'reshape': argument target_shape"):
        kk.layers.Reshape((5, 5), name="reshape")(inputs)


def test_a_model_of_these_layers_saves_and_loads_in_kiln_and_keras(tmp_path):
    """get_config of every new layer is Keras's: a kiln .keras file rebuilds the same model in
    kiln and in real Keras (same predictions)."""
    import numpy as np
    from keras_oracle import real_keras

    keras = real_keras()
    L = kk.layers
    inputs = kk.Input((8, 8, 3))
    x = L.Rescaling(1 / 255.0)(inputs)
    x = L.ZeroPadding2D(1)(x)
    x = L.Conv2D(4, 3, activation="relu6")(x)
    x = L.PReLU(alpha_initializer="ones", shared_axes=[1, 2])(x)
    x = L.SpatialDropout2D(0.2)(x)
    x = L.UpSampling2D(interpolation="bilinear")(x)
    x = L.Cropping2D(2)(x)
    x = L.ReLU(max_value=3.0, negative_slope=0.1)(x)
    x = L.Permute((2, 1, 3))(x)
    x = L.GlobalMaxPooling2D(keepdims=True)(x)
    x = L.Reshape((4,))(x)
    x = L.GaussianDropout(0.1)(x)
    x = L.Identity()(x)
    x = L.Dense(3, activation="gelu")(x)
    x = L.Softmax()(x)
    model = kk.Model(inputs, x)
    path = str(tmp_path / "model.keras")
    model.save(path)
    data = np.random.default_rng(0).uniform(0, 255, size=(2, 8, 8, 3)).astype(np.float32)
    expected = model.predict(data, verbose=0)
    np.testing.assert_allclose(kk.models.load_model(path).predict(data, verbose=0), expected,
                               rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(keras.models.load_model(path).predict(data, verbose=0), expected,
                               rtol=1e-4, atol=1e-6)
