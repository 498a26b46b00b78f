"""Custom layers using keras.ops comparisons, where, slicing, split and stack inside a model,
against real Keras 3 (JAX backend) through the shared checker (keras_oracle.py): the same
classes written once for both APIs, the same weights, then predictions and one SGD step.
Keras's comparisons are bool tensors; used in arithmetic they are 0 / 1 and carry no gradient,
which is what kiln's float32 0.0 / 1.0 with a zero gradient computes."""

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


def gate_layer(K):
    def cast(mask):
        return K.ops.cast(mask, "float32")

    class Gate(K.layers.Layer):
        """Keeps the channels above a learned per-channel threshold, halves the entries below
        their image's channel maximum, and adds a few masks of other comparisons."""

        def build(self, input_shape):
            self.threshold = self.add_weight(shape=(input_shape[-1],),
                                             initializer="random_normal", name="threshold")

        def call(self, x):
            above = K.ops.cast(K.ops.greater(x, self.threshold), "float32")
            peak = K.ops.max(x, axis=-1, keepdims=True)
            not_peak = K.ops.not_equal(x, peak)               # two tensors, broadcast
            # (bool + bool is a logical or in Keras: each mask is cast before the sum)
            masks = (cast(K.ops.less_equal(0.25, x)) + cast(K.ops.less(x, -0.5))
                     + cast(K.ops.greater_equal(x, peak)) + cast(K.ops.equal(x, peak)))
            return x * above + x * not_peak * 0.5 + x * (x > 0) + masks * 0.1

    return Gate


def select_layer(K):
    class Select(K.layers.Layer):
        """keras.ops.where: a leaky relu, the image's channel mean where the input is below
        it (x1 broadcast: its gradient is summed), a sign flip by a per-image condition, and
        a number operand."""

        def call(self, x):
            pooled = K.ops.mean(x, axis=(1, 2), keepdims=True)
            leaky = K.ops.where(x > 0, x, x * 0.1)
            floored = K.ops.where(K.ops.less(x, pooled), pooled, x)
            flipped = K.ops.where(pooled > 0, x, -x)
            return leaky + floored + flipped + K.ops.where(x < -0.2, 1.0, x)

    return Select


def slicing_layer(K):
    class Slices(K.layers.Layer):
        """split (at an index and in equal parts), slices with ints, negative bounds and an
        Ellipsis, stack of two slices, each part flattened into one feature vector."""

        def call(self, x):
            first, rest = K.ops.split(x, [3], axis=-1)           # 3 and 5 channels
            a, b = K.ops.split(rest[..., 1:], 2, axis=-1)         # 2 and 2 channels
            pair = K.ops.stack([x[:, :, :, 0], x[..., -1] * 2.0], axis=-1)
            window = x[:, 1:, :-1, 4]                             # (N, 2, 2)
            parts = [(first, 27), (pair, 18), (window, 4), (a - b, 18), (x[:, 2:3], 24)]
            return K.ops.concatenate([K.ops.reshape(p, (-1, n)) for p, n in parts], axis=-1)

    return Slices


LAYERS = [gate_layer, select_layer, slicing_layer]


@pytest.mark.parametrize("layer", LAYERS, ids=["comparisons", "where", "slicing"])
def test_custom_layers_after_conv2d_train_as_keras(layer):
    def build(K):
        inputs = K.Input((5, 5, 2))
        x = K.layers.Conv2D(8, 3)(inputs)
        x = layer(K)(name="custom")(x)
        if layer is not slicing_layer:
            x = K.layers.Flatten()(x)
        return K.Model(inputs, K.layers.Dense(3, activation="softmax")(x))

    check_against_keras(build, optimizers=("sgd",), steps=1, training_forward=False)


def test_what_where_cannot_do_inside_a_model_is_refused_by_name():
    from kiln import keras as kk

    class WeightElse(kk.layers.Layer):
        def build(self, input_shape):
            self.fallback = self.add_weight(shape=(4,), name="fallback")

        def call(self, x):
            return kk.ops.where(x > 0, x, self.fallback)

    class Indices(kk.layers.Layer):
        def call(self, x):
            return kk.ops.where(x > 0)[0]

    inputs = kk.Input((4,))
    with pytest.raises(NotImplementedError,
                       match=r"WeightElse 'weight_else': keras.ops.where .*Weight operand "
                             r"\(argument x2\)"):
        WeightElse()(inputs)
    with pytest.raises(NotImplementedError, match=r"Indices 'indices': keras.ops.where .*"
                                                  "one-argument form"):
        Indices()(inputs)
    with pytest.raises(ValueError, match=r"keras.ops.where: shapes \(4,\) and \(3,\)"):
        kk.ops.where(inputs > 0, inputs, kk.Input((3,)))


def test_keras_ops_slice_in_a_model_and_what_slicing_refuses():
    import numpy as np

    from kiln import keras as kk

    class Corner(kk.layers.Layer):
        def call(self, x):
            return kk.ops.slice(x, (0, 1, 0, 2), (None, 2, 3, 4))

    inputs = kk.Input((4, 3, 8))
    model = kk.Model(inputs, Corner()(inputs))
    x = np.random.default_rng(0).normal(size=(2, 4, 3, 8)).astype(np.float32)
    np.testing.assert_array_equal(model.predict(x, verbose=0), x[:, 1:3, :, 2:6])
    np.testing.assert_array_equal(kk.ops.slice(x, (0, 1, 0, 2), (2, 2, 3, 4)),
                                  x[:, 1:3, :, 2:6])
    assert kk.ops.stack([inputs[:, :, 0]], axis=1).shape == (None, 1, 4, 8)  # one tensor
    # an int index of an axis of size 1 drops it, though nothing is cut
    single = kk.ops.expand_dims(inputs[:, 0, 0], 1)                          # (None, 1, 8)
    assert single[:, 0].shape == (None, 8) and single[..., 0, :].shape == (None, 8)
    model = kk.Model(inputs, single[:, 0])
    np.testing.assert_array_equal(model.predict(x, verbose=0), x[:, 0, 0])
    for key, message in [((slice(None), slice(None, None, 2)), "a step of 2 on axis 1"),
                         ((0,), "an index 0 of the batch axis"),
                         ((slice(None), None), "an index None on axis 1"),
                         ((slice(None), slice(2, 2)), "an empty slice")]:
        with pytest.raises(NotImplementedError, match=r"keras.ops.slicing .*" + message):
            inputs[key]
    with pytest.raises(IndexError, match="index 4 is out of bounds for axis 1 of size 4"):
        inputs[:, 4]
    with pytest.raises(NotImplementedError, match="keras.ops.split .*along the batch axis"):
        kk.ops.split(inputs, 2, axis=0)
    with pytest.raises(ValueError, match="keras.ops.split cannot cut axis 3 of size 8 into 3"):
        kk.ops.split(inputs, 3, axis=-1)
    with pytest.raises(NotImplementedError, match="keras.ops.stack .*along the batch axis"):
        kk.ops.stack([inputs[:, 0], inputs[:, 1]], axis=0)
