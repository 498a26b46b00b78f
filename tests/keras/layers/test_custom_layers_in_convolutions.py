"""A custom layer's per-channel scale and shift after convolutions, which kiln plans as those
convolutions on scaled weights (ops/conv2d_channel_affine.py), trains as in real Keras 3."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parents[1]))  # the shared real-Keras helper

import pytest  # noqa: E402
from keras_oracle import check_against_keras  # noqa: E402

pytestmark = [
    pytest.mark.usefixtures("kiln_keras_env"),
    pytest.mark.filterwarnings("ignore:__array__ implementation doesn't accept a copy keyword"
                               ":DeprecationWarning"),
]


def channel_affine_layer(K):
    class ChannelAffine(K.layers.Layer):
        """A learned per-channel scale and shift, a relu inside when asked."""

        def __init__(self, data_format="channels_last", relu=False, **kwargs):
            super().__init__(**kwargs)
            self.data_format, self.relu = data_format, relu

        def build(self, input_shape):
            last = self.data_format == "channels_last"
            shape = (input_shape[-1],) if last else (input_shape[1], 1, 1)
            self.scale = self.add_weight(shape=shape, initializer="random_uniform", name="scale")
            self.shift = self.add_weight(shape=shape, initializer="random_normal", name="shift")

        def call(self, x):
            y = K.ops.add(K.ops.multiply(x, self.scale), self.shift)
            return K.ops.relu(y) if self.relu else y

    return ChannelAffine


@pytest.mark.parametrize("data_format", ["channels_last", "channels_first"])
def test_scale_and_shift_folded_into_convolutions_in_sub_batches_train_as_keras(
        data_format, monkeypatch):
    """The custom layer of `kiln bench custom-layer` after convolutions with and without a
    bias: kiln plans each pair as one convolution on scaled weights, its front in sub-batches."""
    from kiln.plan import sub_batches

    monkeypatch.setattr(sub_batches, "BUDGET_BYTES", 2 * 8 * 8 * 6 * 4)
    monkeypatch.setattr(sub_batches, "MIN_IMAGES", 2)

    def build(K):
        affine = channel_affine_layer(K)
        shape = (8, 8, 2) if data_format == "channels_last" else (2, 8, 8)
        inputs = K.Input(shape)
        x = K.layers.Conv2D(6, 3, padding="same", data_format=data_format)(inputs)
        x = K.layers.Activation("relu")(affine(data_format, name="affine_1")(x))
        x = K.layers.Conv2D(4, 3, use_bias=False, data_format=data_format)(x)
        x = affine(data_format, relu=True, name="affine_2")(x)
        x = K.layers.MaxPooling2D(data_format=data_format)(x)
        x = K.layers.Flatten(data_format=data_format)(x)
        return K.Model(inputs, K.layers.Dense(3, activation="softmax")(x))

    ours, _ = check_against_keras(build, optimizers=("sgd", "adam"), steps=2)
    kinds = [type(op).__name__ for op in ours.ops]
    assert kinds.count("Conv2DChannelAffineOp") == 2, kinds
    ours.compile(optimizer="sgd", loss="categorical_crossentropy")
    assert ours._plan(True, 6).sub_batch == 2  # as the training checks' plans (6 samples)
