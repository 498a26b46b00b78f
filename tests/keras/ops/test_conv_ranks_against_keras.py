"""keras.ops.conv in 1D, 2D and 3D (the kernel's rank decides, as Keras 3): eagerly against
real Keras 3's keras.ops.conv (JAX backend), strides, 'same' padding, dilation, groups and both
data formats; inside a model (a custom layer's kernel weight) 1D and 2D train as Keras, and a
3D one is refused by name."""

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).parents[1]))  # the shared real-Keras helper
from keras_oracle import check_against_keras, real_keras  # noqa: E402

from kiln import keras as kk  # noqa: E402

pytestmark = pytest.mark.usefixtures("kiln_keras_env")

SPATIAL = {1: (9,), 2: (7, 6), 3: (5, 6, 6)}
OPTIONS = {"valid": {}, "same_strided": {"strides": 2, "padding": "same"},
           "dilated": {"dilation_rate": 2}, "strides_tuple": {"strides": None}}


@pytest.mark.parametrize("groups", [1, 2])
@pytest.mark.parametrize("options", sorted(OPTIONS))
@pytest.mark.parametrize("data_format", ["channels_last", "channels_first"])
@pytest.mark.parametrize("rank", [1, 2, 3])
def test_eager_conv_equals_keras(rank, data_format, options, groups):
    keras = real_keras()
    rng = np.random.default_rng(rank)
    x = rng.normal(size=(2, *SPATIAL[rank], 4)).astype(np.float32)
    if data_format == "channels_first":
        x = np.ascontiguousarray(np.moveaxis(x, -1, 1))
    kernel = rng.normal(size=(*(3,) * rank, 4 // groups, 6)).astype(np.float32)
    keywords = dict(OPTIONS[options])
    if options == "strides_tuple":
        keywords["strides"] = (1, 2, 1)[:rank]
    ours = kk.ops.conv(x, kernel, data_format=data_format, **keywords)
    theirs = np.asarray(keras.ops.conv(x, kernel, data_format=data_format, **keywords))
    assert ours.shape == theirs.shape and ours.dtype == theirs.dtype
    np.testing.assert_allclose(ours, theirs, rtol=1e-4, atol=1e-4)


def test_eager_arguments_are_checked():
    x = np.zeros((1, 8, 3), np.float32)
    with pytest.raises(ValueError, match="strides.*tuple of 1"):
        kk.ops.conv(x, np.zeros((3, 3, 2), np.float32), strides=(1, 1))
    with pytest.raises(ValueError, match="kernel of rank 3, 4 or 5"):
        kk.ops.conv(x, np.zeros((3, 3, 3, 2), np.float32))


def conv_layer(K, rank, data_format):
    class OwnConv(K.layers.Layer):
        """A convolution whose kernel is its own weight, through keras.ops.conv."""

        def build(self, input_shape):
            channels = input_shape[-1] if data_format == "channels_last" else input_shape[1]
            self.kernel = self.add_weight(shape=(*(2,) * rank, channels, 3),
                                          initializer="glorot_uniform", name="kernel")

        def call(self, x):
            return K.ops.conv(x, self.kernel, strides=1, padding="same",
                              data_format=data_format)

    return OwnConv(name="own_conv")


@pytest.mark.parametrize("rank, data_format", [(1, "channels_last"), (1, "channels_first"),
                                               (2, "channels_last")])
def test_conv_in_a_model_trains_as_keras(rank, data_format):
    shape = {1: (6, 2), 2: (5, 5, 2)}[rank]

    def build(K):
        inputs = K.Input(shape)
        x = conv_layer(K, rank, data_format)(inputs)
        x = K.layers.Flatten()(K.layers.Activation("tanh")(x))
        return K.Model(inputs, K.layers.Dense(3, activation="softmax")(x))

    check_against_keras(build, optimizers=["sgd"], steps=1)


def test_3d_conv_in_a_model_is_refused_by_name():
    inputs = kk.Input((4, 4, 4, 2))
    with pytest.raises(NotImplementedError, match=r"own_conv.*keras.ops.conv.*3D"):
        conv_layer(kk, 3, "channels_last")(inputs)
