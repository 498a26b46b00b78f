"""Multiply and Add of two inputs whose shapes differ but broadcast, as Keras's merges allow
(EfficientNet's squeeze-and-excitation: (N, H, W, C) * (N, 1, 1, C)), against real Keras 3:
predictions and training (gradients reach both inputs)."""

import pytest
from keras_oracle import check_against_keras

from kiln import keras as kk

pytestmark = [
    pytest.mark.usefixtures("kiln_keras_env"),
    pytest.mark.filterwarnings("ignore:__array__ implementation doesn't accept a copy keyword"
                               ":DeprecationWarning"),
]


@pytest.mark.parametrize("merge", ["multiply", "add"])
def test_squeeze_and_excitation_trains_like_keras(merge):
    def build(K):
        inputs = K.Input((5, 5, 3))
        x = K.layers.Conv2D(4, 3, padding="same", activation="relu")(inputs)
        se = K.layers.GlobalAveragePooling2D()(x)
        se = K.layers.Reshape((1, 1, 4))(se)
        se = K.layers.Conv2D(4, 1, activation="sigmoid")(se)
        x = getattr(K.layers, merge)([x, se])
        x = K.layers.Flatten()(x)
        return K.Model(inputs, K.layers.Dense(3, activation="softmax")(x))

    check_against_keras(build, optimizers=["sgd"])


def test_shapes_that_do_not_broadcast_are_refused():
    a, b = kk.Input((4, 4, 3)), kk.Input((2, 1, 3))
    with pytest.raises(ValueError, match="Multiply 'multiply': inputs must have the same shape"):
        kk.layers.Multiply()([a, b])
