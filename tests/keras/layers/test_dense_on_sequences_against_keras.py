"""keras.layers.Dense on a sequence (batch, steps, features) against real Keras 3 (JAX
backend): applied to the last axis, (batch, steps, units), its bias and activation fused, the
rest of the model reading the 3D output (Flatten in Keras's order, another Dense, Conv1D);
and on an image, applied to the last axis Keras shows in either data format."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parents[1]))  # the shared real-Keras helper

import numpy as np  # noqa: E402
import pytest  # noqa: E402
from keras_oracle import check_against_keras  # noqa: E402

from kiln import keras as kk  # noqa: E402


def token_ids(count=6, steps=5, vocabulary=10, seed=0):
    return np.random.default_rng(seed).integers(0, vocabulary, (count, steps)).astype(np.int32)


@pytest.mark.parametrize("activation", ["relu", "tanh", None, "gelu"])
def test_embedding_dense_on_steps_then_flatten_dense(activation):
    def build(K):
        inputs = K.Input((5,), dtype="int32")
        x = K.layers.Embedding(10, 4)(inputs)
        x = K.layers.Dense(6, activation=activation)(x)
        x = K.layers.Flatten()(x)
        return K.Model(inputs, K.layers.Dense(3, activation="softmax")(x))

    kiln_model, _ = check_against_keras(build, inputs=token_ids(),
                                        optimizers=("sgd", "adam"))
    assert kiln_model.layers[2].output.shape == (None, 5, 6)


def test_stacked_dense_on_a_float_sequence_and_a_conv1d_after_it():
    def build(K):
        inputs = K.Input((7, 3))
        x = K.layers.Dense(5, activation="relu")(inputs)
        x = K.layers.Dense(4, use_bias=False)(x)
        x = K.layers.Conv1D(2, 3, activation="relu")(x)
        x = K.layers.Flatten()(x)
        return K.Model(inputs, K.layers.Dense(3, activation="softmax")(x))

    check_against_keras(build, optimizers=("sgd",))


def test_a_sequence_output_predicts_as_keras():
    def build(K):
        inputs = K.Input((5,), dtype="int32")
        x = K.layers.Embedding(10, 4)(inputs)
        return K.Model(inputs, K.layers.Dense(3, activation="sigmoid")(x))

    check_against_keras(build, inputs=token_ids(), train=False)


@pytest.mark.parametrize("data_format", ["channels_last", "channels_first"])
def test_dense_on_an_image_applies_to_its_last_axis_as_keras(data_format):
    # ConvNeXt's pointwise layers: (batch, height, width, units) after a convolution in
    # channels_last; in channels_first Keras's last axis is the width
    def build(K):
        inputs = K.Input((6, 5, 3) if data_format == "channels_last" else (3, 6, 5))
        x = K.layers.Conv2D(4, 3, padding="same", data_format=data_format)(inputs)
        x = K.layers.Dense(8, activation="gelu")(x)
        x = K.layers.Dense(4, activation="relu")(x)
        x = K.layers.Add()([x, K.layers.Conv2D(4, 1, data_format=data_format)(inputs)]
                           if data_format == "channels_last" else [x, x])
        x = K.layers.Flatten(data_format=data_format)(x)
        return K.Model(inputs, K.layers.Dense(3, activation="softmax")(x))

    kiln_model, _ = check_against_keras(build, optimizers=("sgd", "adam"))
    expected = (None, 6, 5, 8) if data_format == "channels_last" else (None, 4, 6, 8)
    assert kiln_model.layers[2].output.shape == expected


def test_a_5d_input_is_refused_naming_the_layer():
    inputs = kk.Input((2, 4, 4, 2))
    with pytest.raises(ValueError, match="Dense 'dense_5d'.*or a 4D image, got shape"):
        kk.layers.Dense(3, name="dense_5d")(inputs)
