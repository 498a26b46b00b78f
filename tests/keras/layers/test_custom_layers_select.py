"""Custom layers using keras.ops comparisons (and what builds on them) inside a model,
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


def test_comparisons_in_a_custom_layer_after_conv2d_train_as_keras():
    def build(K):
        inputs = K.Input((5, 5, 2))
        x = K.layers.Conv2D(8, 3)(inputs)
        x = gate_layer(K)(name="gate")(x)
        x = K.layers.Flatten()(x)
        return K.Model(inputs, K.layers.Dense(3, activation="softmax")(x))

    check_against_keras(build, optimizers=("sgd",), steps=1, training_forward=False)
