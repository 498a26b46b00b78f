"""Conv2DChannelAffineOp: a convolution and the custom per-channel scale / shift (and relu)
after it, planned as one convolution on scaled weights. Each model trains and predicts as
the same model with the custom layer's ops left separate (kiln's unfused ops are themselves
checked against Keras and central differences), with every weight moving: convolution biases,
scale-only and shift-only layers, grouped convolutions, a front cut into sub-batches, frozen
layers and layers called twice."""

import numpy as np
import pytest

from kiln import keras
from kiln.graph import rules
from kiln.keras import layers, ops
from kiln.plan import sub_batches

FORMATS = ["channels_last", "channels_first"]


class Affine(layers.Layer):
    """x * scale + shift per channel, either of them optional, an optional relu inside."""

    def __init__(self, data_format="channels_last", scale=True, shift=True, relu=False,
                 **kwargs):
        super().__init__(**kwargs)
        self.data_format, self.use_scale, self.use_shift = data_format, scale, shift
        self.relu = relu

    def build(self, input_shape):
        last = self.data_format == "channels_last"
        channels = input_shape[-1 if last else 1]
        shape = (channels,) if last else (channels, 1, 1)
        if self.use_scale:
            self.scale = self.add_weight(shape=shape, initializer="ones", name="scale")
        if self.use_shift:
            self.shift = self.add_weight(shape=shape, initializer="zeros", name="shift")

    def call(self, x):
        if self.use_scale:
            x = ops.multiply(x, self.scale)
        if self.use_shift:
            x = ops.add(x, self.shift)
        return ops.relu(x) if self.relu else x


def image_shape(data_format, size=10, channels=3):
    return (size, size, channels) if data_format == "channels_last" else (channels, size, size)


def data(data_format, count=16, size=10, classes=3):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(count, *image_shape(data_format, size))).astype(np.float32)
    return x, np.eye(classes, dtype=np.float32)[rng.integers(0, classes, count)]


def compiled(make, fold):
    keras.utils.set_random_seed(4)
    model = make()
    model.compile(loss="categorical_crossentropy", optimizer=keras.optimizers.Adam(0.01))
    if not fold:
        model._plan_rules = rules.without("channel affine into conv", "channel affine",
                                          rules=model._plan_rules)
    return model


def check_folds_and_trains_like_separate_ops(make, data_format, folded, size=10, batch=8,
                                             frozen=()):
    """`folded`: how many Conv2DChannelAffineOp ops the training plan must have."""
    x, y = data(data_format, size=size)
    fused, separate = compiled(make, True), compiled(make, False)
    rng = np.random.default_rng(1)
    weights = [w + rng.normal(scale=0.3, size=w.shape).astype(np.float32)
               for w in fused.get_weights()]  # scales other than 1, shifts other than 0
    for model in (fused, separate):
        model.set_weights(weights)
        for name in frozen:
            model.get_layer(name).trainable = False
        if frozen:
            model.compile(loss="categorical_crossentropy", optimizer=keras.optimizers.Adam(0.01))
    kinds = [type(op).__name__ for op in fused.ops]
    assert kinds.count("Conv2DChannelAffineOp") == folded, kinds
    assert "ChannelAffineOp" not in kinds and "BroadcastBinaryOp" not in kinds
    assert "Conv2DChannelAffineOp" not in [type(op).__name__ for op in separate.ops]
    np.testing.assert_allclose(fused.predict(x, verbose=0), separate.predict(x, verbose=0),
                               rtol=1e-4, atol=1e-5)
    losses = [model.fit(x, y, batch_size=batch, epochs=2, shuffle=False,
                        verbose=0).history["loss"] for model in (fused, separate)]
    np.testing.assert_allclose(losses[0], losses[1], rtol=1e-4)
    frozen_paths = {w.path for name in frozen for w in fused.get_layer(name).weights}
    for weight, a, b, before in zip(fused.weights, fused.get_weights(), separate.get_weights(),
                                    weights, strict=True):
        np.testing.assert_allclose(a, b, rtol=2e-4, atol=2e-5, err_msg=weight.path)
        if weight.path in frozen_paths:
            np.testing.assert_array_equal(a, before, err_msg=weight.path)
        else:
            assert not np.allclose(a, before), weight.path  # every trainable weight moved
    return fused


def classifier(data_format, *stack, size=10):
    return keras.Sequential([keras.Input(image_shape(data_format, size)), *stack,
                             layers.Flatten(data_format=data_format),
                             layers.Dense(3, activation="softmax")])


@pytest.mark.parametrize("data_format", FORMATS)
def test_a_convolution_bias_then_scale_shift_and_relu(data_format):
    """b' = b * s + t: the convolution's own bias gets db' * s, the scale db' * b more."""
    def make():
        return classifier(data_format, layers.Conv2D(8, 3, data_format=data_format),
                          Affine(data_format), layers.Activation("relu"),
                          layers.Conv2D(4, 3, use_bias=False, data_format=data_format),
                          Affine(data_format, relu=True))
    check_folds_and_trains_like_separate_ops(make, data_format, folded=2)


@pytest.mark.parametrize("data_format", FORMATS)
def test_scale_only_and_shift_only_layers(data_format):
    def make():
        return classifier(
            data_format, layers.Conv2D(8, 3, use_bias=False, data_format=data_format),
            Affine(data_format, shift=False, relu=True),
            layers.Conv2D(4, 3, use_bias=False, data_format=data_format),
            Affine(data_format, scale=False), layers.Activation("relu"))
    check_folds_and_trains_like_separate_ops(make, data_format, folded=2)


@pytest.mark.parametrize("data_format", FORMATS)
def test_a_depthwise_convolution_scaled_per_output_channel(data_format):
    """Grouped kernels (g, O / g, I / g, kh, kw): the scale runs along their first two dims."""
    def make():
        return classifier(
            data_format, layers.DepthwiseConv2D(3, depth_multiplier=2, data_format=data_format),
            Affine(data_format, relu=True))
    check_folds_and_trains_like_separate_ops(make, data_format, folded=1)


@pytest.mark.parametrize("data_format", FORMATS)
def test_a_front_in_sub_batches_sums_the_scaled_gradients_first(data_format, monkeypatch):
    """mnist_cnn's shape: the gradients of W' and b' are summed over the sub-batches, then
    the parameters' are planned once; the recomputed first convolution reads the same W'."""
    monkeypatch.setattr(sub_batches, "BUDGET_BYTES", 2 * 10 * 10 * 8 * 4)
    monkeypatch.setattr(sub_batches, "MIN_IMAGES", 2)

    def make():
        return classifier(
            data_format, layers.Conv2D(8, 3, padding="same", data_format=data_format),
            Affine(data_format, relu=True),
            layers.Conv2D(8, 3, padding="same", use_bias=False, data_format=data_format),
            Affine(data_format, relu=True), layers.MaxPooling2D(data_format=data_format))
    model = check_folds_and_trains_like_separate_ops(make, data_format, folded=2)
    plan = model._plan(True, 8)
    assert plan.sub_batch == 2
    described = "\n".join(plan.describe())
    assert described.count("scale and bias vectors") == 2  # once per step, not per sub-batch
    assert described.count("scale, shift and bias gradients") == 2


@pytest.mark.parametrize("frozen", [("conv",), ("affine",)])
def test_frozen_convolution_or_frozen_affine(frozen):
    def make():
        return classifier("channels_last", layers.Conv2D(8, 3, name="conv"),
                          Affine(relu=True, name="affine"))
    check_folds_and_trains_like_separate_ops(make, "channels_last", folded=1, frozen=frozen)


def test_a_convolution_and_its_affine_called_twice_share_the_scaled_weights():
    """Two inputs through one Conv2D and one Affine: one W' per step, both calls' gradients."""
    def make():
        conv, affine = layers.Conv2D(6, 3, name="shared_conv"), Affine(relu=True, name="aff")
        left, right = keras.Input((10, 10, 3)), keras.Input((10, 10, 3))
        merged = layers.Concatenate()([affine(conv(t)) for t in (left, right)])
        return keras.Model([left, right],
                           layers.Dense(3, activation="softmax")(layers.Flatten()(merged)))

    x, y = data("channels_last")
    x2 = x[::-1].copy()
    fused, separate = compiled(make, True), compiled(make, False)
    kinds = [type(op).__name__ for op in fused.ops]
    assert kinds.count("Conv2DChannelAffineOp") == 2
    for model in (fused, separate):
        model.fit([x, x2], y, batch_size=8, epochs=2, shuffle=False, verbose=0)
    assert "\n".join(fused._plan(True, 8).describe()).count("scale and bias vectors") == 1
    for a, b in zip(fused.get_weights(), separate.get_weights(), strict=True):
        np.testing.assert_allclose(a, b, rtol=2e-4, atol=2e-5)
