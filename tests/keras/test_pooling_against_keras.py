"""Pooling layers against real Keras 3 (JAX backend) through the shared checker: global average
/ max pooling (keepdims), max / average pooling with 'same' padding and strides other than the
pool size (average pooling divides by the real cells only, as Keras does), in both formats."""

import pytest
from keras_oracle import check_against_keras

from kiln import keras as kk

pytestmark = [
    pytest.mark.usefixtures("kiln_keras_env"),
    pytest.mark.filterwarnings("ignore:__array__ implementation doesn't accept a copy keyword"
                               ":DeprecationWarning"),
]

CL, CF = "channels_last", "channels_first"


def image(h, w, c, data_format):
    return (h, w, c) if data_format == CL else (c, h, w)


def head(K, x, data_format):
    x = K.layers.Flatten(data_format=data_format)(x) if len(x.shape) == 4 else x
    return K.layers.Dense(3, activation="softmax")(x)


@pytest.mark.parametrize("keepdims", [False, True])
@pytest.mark.parametrize("data_format", [CL, CF])
@pytest.mark.parametrize("layer", ["GlobalAveragePooling2D", "GlobalMaxPooling2D"])
def test_global_pooling_matches_keras(layer, data_format, keepdims):
    def build(K):
        inputs = K.Input(image(6, 5, 2, data_format))
        x = K.layers.Conv2D(4, 3, activation="relu", data_format=data_format)(inputs)
        x = getattr(K.layers, layer)(data_format=data_format, keepdims=keepdims)(x)
        return K.Model(inputs, head(K, x, data_format))

    kiln_model, keras_model = check_against_keras(build, optimizers=["sgd", "adam"])
    assert kiln_model.layers[2].get_config() == keras_model.layers[2].get_config()
    assert kiln_model.layers[2].output.shape == tuple(keras_model.layers[2].output.shape)


# (input h, w), pool_size, strides: 'same' padding with strides other than the pool size
SAME_CASES = {
    "3x3-s2-even": ((8, 6), 3, 2),
    "3x3-s1": ((5, 6), 3, 1),
    "2x2-s1": ((5, 4), 2, 1),
    "2x3-s(2,1)": ((7, 5), (2, 3), (2, 1)),
    "3x3-s3-odd": ((7, 8), 3, 3),
}


@pytest.mark.parametrize("data_format", [CL, CF])
@pytest.mark.parametrize("case", list(SAME_CASES))
@pytest.mark.parametrize("layer", ["MaxPooling2D", "AveragePooling2D"])
def test_same_padding_and_strides_match_keras(layer, case, data_format):
    (h, w), pool_size, strides = SAME_CASES[case]

    def build(K):
        inputs = K.Input(image(h, w, 2, data_format))
        x = K.layers.Conv2D(3, 1, activation="tanh", data_format=data_format)(inputs)
        x = getattr(K.layers, layer)(pool_size, strides=strides, padding="same",
                                     data_format=data_format)(x)
        return K.Model(inputs, head(K, x, data_format))

    check_against_keras(build, optimizers=["sgd"])


def test_valid_padding_with_strides_matches_keras():
    def build(K):
        inputs = K.Input((9, 7, 2))
        x = K.layers.AveragePooling2D(3, strides=(2, 1))(inputs)
        x = K.layers.MaxPooling2D((2, 3), strides=1)(x)
        return K.Model(inputs, head(K, x, CL))

    check_against_keras(build, optimizers=["sgd"])


def test_global_pooling_rejects_bad_arguments():
    with pytest.raises(ValueError, match="argument keepdims must be True or False"):
        kk.layers.GlobalAveragePooling2D(keepdims="yes")
    with pytest.raises(ValueError, match="data_format"):
        kk.layers.GlobalMaxPooling2D(data_format="nhwc")


@pytest.mark.parametrize("argument", ["pool_size", "strides"])
def test_pooling_sizes_must_be_positive(argument):
    with pytest.raises(ValueError, match=f"MaxPooling2D 'p': argument {argument} must be ints"):
        kk.layers.MaxPooling2D(**{argument: 0}, name="p")


@pytest.mark.parametrize("data_format", [CL, CF])
@pytest.mark.parametrize("other", ["concatenate", "add"])
def test_max_pooling_of_a_relu_tensor_read_twice_trains_like_keras(other, data_format):
    """A U-Net skip: a relu convolution read by max pooling and by another layer. Max pooling
    may apply relu's derivative to its pooled gradient only when it is the tensor's one
    reader; here the skip's gradient needs it too (kiln got these gradients wrong: the
    encoder of the bench U-Net trained 50-150% off Keras)."""
    f = dict(data_format=data_format)
    axis = -1 if data_format == CL else 1

    def build(K):
        L = K.layers
        inputs = K.Input(image(8, 8, 2, data_format))
        skip = L.Conv2D(3, 3, padding="same", activation="relu", **f)(inputs)
        x = L.UpSampling2D(2, **f)(L.MaxPooling2D(2, **f)(skip))
        x = L.add([x, skip]) if other == "add" else L.concatenate([x, skip], axis=axis)
        return K.Model(inputs, head(K, x, data_format))

    check_against_keras(build, optimizers=["sgd"], steps=1)
