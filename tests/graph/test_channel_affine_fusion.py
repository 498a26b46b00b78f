"""A custom layer's per-channel `x * scale + bias` and the relu after it fold into one
ChannelAffineOp (graph/fusion.py: fold_channel_affine), and after a convolution into the
convolution (fold_conv_channel_affine); the model predicts and trains as with the three ops
unfused, in both data formats."""

import numpy as np
import pytest

from kiln import keras
from kiln.graph import fusion, rules
from kiln.keras import layers, ops


class ScaleBias(layers.Layer):
    """y = x * scale + bias per channel (the custom layer of `kiln bench custom-layer`)."""

    def __init__(self, data_format="channels_last", relu_inside=False, **kwargs):
        super().__init__(**kwargs)
        self.data_format, self.relu_inside = data_format, relu_inside

    def build(self, input_shape):
        channels = input_shape[-1 if self.data_format == "channels_last" else 1]
        shape = (channels,) if self.data_format == "channels_last" else (channels, 1, 1)
        self.scale = self.add_weight(shape=shape, initializer="ones", name="scale")
        self.bias = self.add_weight(shape=shape, initializer="zeros", name="bias")

    def call(self, x):
        y = ops.add(ops.multiply(x, self.scale), self.bias)
        return ops.relu(y) if self.relu_inside else y


# the rules each variant plans without
WITHOUT = {"into the convolution": (),
           "ChannelAffine": ("channel affine into conv",),
           "separate": ("channel affine into conv", "channel affine")}


def model(data_format, variant):
    keras.utils.set_random_seed(4)
    shape = (10, 10, 3) if data_format == "channels_last" else (3, 10, 10)
    net = keras.Sequential([
        keras.Input(shape),
        layers.Conv2D(16, 3, use_bias=False, data_format=data_format),
        ScaleBias(data_format), layers.Activation("relu"),
        layers.MaxPooling2D(data_format=data_format),
        layers.Conv2D(8, 3, use_bias=False, data_format=data_format),
        ScaleBias(data_format, relu_inside=True),
        layers.Flatten(data_format=data_format), layers.Dense(6), ScaleBias(),
        layers.Dense(3, activation="softmax")])
    net.compile(loss="categorical_crossentropy", optimizer=keras.optimizers.Adam(0.01))
    net._plan_rules = rules.without(*WITHOUT[variant], rules=net._plan_rules)
    return net


@pytest.mark.parametrize("variant", ["into the convolution", "ChannelAffine"])
@pytest.mark.parametrize("data_format", ["channels_last", "channels_first"])
def test_custom_scale_bias_layers_fold_and_train_like_unfused(data_format, variant):
    rng = np.random.default_rng(0)
    shape = (16, 10, 10, 3) if data_format == "channels_last" else (16, 3, 10, 10)
    x = rng.normal(size=shape).astype(np.float32)
    y = np.eye(3, dtype=np.float32)[rng.integers(0, 3, 16)]
    fused, separate = model(data_format, variant), model(data_format, "separate")
    weights = [w + rng.normal(scale=0.3, size=w.shape).astype(np.float32)
               for w in fused.get_weights()]  # scales other than 1, biases other than 0
    fused.set_weights(weights)
    separate.set_weights(weights)
    kinds = [(type(op).__name__, getattr(op, "activation", None)) for op in fused.ops]
    after_conv = "Conv2DChannelAffineOp" if variant == "into the convolution" else "ChannelAffineOp"
    assert kinds.count((after_conv, "relu")) == 2
    assert kinds.count(("ChannelAffineOp", None)) == 1  # after a Dense, no relu follows
    assert "BroadcastBinaryOp" not in [kind for kind, _ in kinds]
    assert "ChannelAffineOp" not in [type(op).__name__ for op in separate.ops]
    np.testing.assert_allclose(fused.predict(x, verbose=0), separate.predict(x, verbose=0),
                               rtol=1e-4, atol=1e-5)  # a nearly saturated softmax
    losses = [net.fit(x, y, batch_size=8, epochs=2, shuffle=False, verbose=0).history["loss"]
              for net in (fused, separate)]
    np.testing.assert_allclose(losses[0], losses[1], rtol=1e-5)
    for a, b, before in zip(fused.get_weights(), separate.get_weights(), weights, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)
        assert not np.allclose(a, before)  # every weight, scales and biases too, trained


def test_only_the_same_layers_per_channel_weights_fold():
    """A multiply by one layer's weight and an add of another's stay apart (the fused op
    names its parameters after one layer), as does a scale that is not per channel."""
    from kiln.binding import constants as dnnl
    from kiln.ops.broadcast import BroadcastBinaryOp

    per_channel = (1, 4, 1, 1)
    mul = BroadcastBinaryOp("a", "multiply", ("scale", per_channel, dnnl.abcd))
    assert fusion.fold_channel_affine(
        mul, BroadcastBinaryOp("b", "add", ("bias", per_channel, dnnl.abcd))) is None
    merged = fusion.fold_channel_affine(
        mul, BroadcastBinaryOp("a", "add", ("bias", per_channel, dnnl.abcd)))
    assert merged.parameter_dims(None) == {"scale": (per_channel, dnnl.abcd),
                                           "bias": (per_channel, dnnl.abcd)}
    rowwise = BroadcastBinaryOp("a", "multiply", ("scale", (1, 4, 5, 1), dnnl.abcd))
    assert fusion.fold_channel_affine(
        rowwise, BroadcastBinaryOp("a", "add", ("bias", per_channel, dnnl.abcd))) is None
