"""BatchNormalization after Flatten normalizes each flattened feature, as in Keras: one
gamma / beta / moving statistic per (h, w, c) feature, in both data formats."""

import pytest
from keras_oracle import check_against_keras


@pytest.mark.parametrize("data_format", ["channels_last", "channels_first"])
def test_batch_norm_after_flatten_matches_keras(data_format):
    shape = (5, 5, 2) if data_format == "channels_last" else (2, 5, 5)

    def build(K):
        inputs = K.Input(shape)
        x = K.layers.Conv2D(3, 2, activation="tanh", data_format=data_format)(inputs)
        x = K.layers.Flatten(data_format=data_format)(x)
        x = K.layers.BatchNormalization()(x)
        x = K.layers.Activation("relu")(x)
        outputs = K.layers.Dense(4, activation="softmax")(x)
        return K.Model(inputs, outputs)

    kiln_model, _ = check_against_keras(build, optimizers=("sgd", "adam"))
    assert [w.shape for w in kiln_model.layers[3].weights] == [(48,)] * 4


def test_batch_norm_on_a_flattened_model_input():
    # the input batch is already in (h, w, c) order: the plan copies it rather than viewing
    # the buffer fit() points at each batch
    def build(K):
        inputs = K.Input((3, 3, 2))
        x = K.layers.BatchNormalization()(K.layers.Flatten()(inputs))
        return K.Model(inputs, K.layers.Dense(2, activation="softmax")(x))

    kiln_model, _ = check_against_keras(build, optimizers=("sgd",), steps=3, batch_size=4)
    assert [w.shape for w in kiln_model.layers[2].weights] == [(18,)] * 4
