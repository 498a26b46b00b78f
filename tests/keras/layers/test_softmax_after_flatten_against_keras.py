"""Softmax over a Flatten of a 4D tensor, against real Keras 3: MobileNetV3's top
(GlobalAveragePooling2D(keepdims=True), a 1x1 Conv2D, Flatten, Activation("softmax")) and a
Flatten of several pixels, whose features are in Keras's (H, W, C) order, not the channels'.

kiln's Flatten is free (the 4D memory stays as it is); the softmax reads it as the
(N, features) matrix first (kiln/ops/softmax.py), so values, the training loss and the update
of the convolution under it equal Keras's."""

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parents[1]))  # the shared real-Keras checker
from keras_oracle import check_against_keras  # noqa: E402

pytestmark = pytest.mark.usefixtures("kiln_keras_env")


def pooled_top(K):
    x = K.Input((5, 5, 3))
    y = K.layers.GlobalAveragePooling2D(keepdims=True)(K.layers.Conv2D(4, 3)(x))
    y = K.layers.Flatten()(K.layers.Conv2D(6, 1, name="logits")(y))
    return K.Model(x, K.layers.Activation("softmax", name="predictions")(y))


def several_pixels(K):
    x = K.Input((3, 2, 4))
    y = K.layers.Flatten()(K.layers.Conv2D(2, 1, padding="same")(x))
    return K.Model(x, K.layers.Softmax()(y))


@pytest.mark.parametrize("build", [pooled_top, several_pixels], ids=lambda b: b.__name__)
def test_softmax_of_a_flattened_4d_tensor_against_keras(build):
    check_against_keras(build, optimizers=["sgd"], steps=1)
