"""numpy constants in a custom layer's call() (normalization by a mean and a standard
deviation, a constant on the left of a subtraction or division) trace into the plan and
train as in real Keras 3, in both data formats; what still cannot be a constant says why."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parents[1]))  # the shared real-Keras helper

import numpy as np  # noqa: E402
import pytest  # noqa: E402
from keras_oracle import check_against_keras  # noqa: E402

from kiln import keras as kk  # noqa: E402

pytestmark = [
    pytest.mark.usefixtures("kiln_keras_env"),
    pytest.mark.filterwarnings("ignore:__array__ implementation doesn't accept a copy keyword"
                               ":DeprecationWarning"),
]

MEAN = np.array([0.2, -0.1, 0.4], np.float32)
STD = [0.5, 2.0, 1.5]  # a list of numbers is a constant too


def normalize_layer(K, data_format):
    channels_last = data_format == "channels_last"
    mean = MEAN if channels_last else MEAN.reshape(3, 1, 1)
    std = STD if channels_last else np.reshape(STD, (3, 1, 1))
    rows = np.linspace(0.5, 1.5, 6, dtype=np.float32)  # one value per row of the image
    rows = rows.reshape((6, 1, 1) if channels_last else (1, 6, 1))

    class Normalize(K.layers.Layer):
        def call(self, x):
            y = K.ops.divide(K.ops.subtract(x, mean), std)
            y = K.ops.maximum(y, -mean) + 1.0 - y * rows
            return K.ops.subtract(mean, y) / K.ops.add(2.0 + K.ops.square(y), std)

    return Normalize


@pytest.mark.parametrize("data_format", ["channels_last", "channels_first"])
def test_numpy_constants_in_call_train_as_keras(data_format):
    def build(K):
        shape = (6, 6, 3) if data_format == "channels_last" else (3, 6, 6)
        inputs = K.Input(shape)
        # after a convolution: kiln knows the tensor's data format from the layer that made it
        x = K.layers.Conv2D(3, 1, data_format=data_format)(inputs)
        x = normalize_layer(K, data_format)(name="normalize")(x)
        x = K.layers.Conv2D(4, 3, activation="relu", data_format=data_format)(x)
        x = K.layers.Flatten(data_format=data_format)(x)
        return K.Model(inputs, K.layers.Dense(3, activation="softmax")(x))

    ours, _ = check_against_keras(build, optimizers=("sgd", "adam"), steps=2)
    assert "BroadcastBinaryOp" in [type(op).__name__ for op in ours.ops]


def test_a_constant_with_the_batch_axis_is_refused_by_name():
    class Batchwise(kk.layers.Layer):
        def call(self, x):
            return x + np.ones((4, 3), np.float32)

    with pytest.raises(ValueError, match=r"Batchwise 'batchwise'.*\(4, 3\).*batch"):
        Batchwise()(kk.Input((3,)))
