"""BatchNormalization on inputs of rank 3 and 5, channel axis -1 and 1 (and PReLU on rank 5),
against real Keras 3 (ranks 2 and 4: test_conv_family_against_keras.py and
test_keras_oracle_models.py).

Keras normalizes over every axis but the channel axis whatever the rank; kiln runs each rank on
oneDNN's batch normalization (rank 3 and 5 through a 4D view of the same bytes,
kiln/ops/batch_norm_views.py). Each model is compared in inference (moving statistics drawn at
random, so they matter), in one training-mode forward, and over one fit (weights and moving
statistics after it), through keras_oracle.
"""

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).parents[1]))  # the shared real-Keras checker
from keras_oracle import check_against_keras  # noqa: E402

from kiln import keras as kk  # noqa: E402

pytestmark = pytest.mark.usefixtures("kiln_keras_env")


def batch_norm(K, axis):
    return K.layers.BatchNormalization(axis=axis, momentum=0.8,
                                       gamma_initializer="random_uniform",
                                       moving_mean_initializer="random_normal",
                                       moving_variance_initializer="random_uniform")


def head(K, x):
    return K.layers.Dense(3, activation="softmax")(K.layers.Flatten()(x))


MODELS = {
    # (batch, steps, channels): the Conv1D output of the issue
    "rank3_last": lambda K: _model(K, (7, 2), lambda x: batch_norm(K, -1)(
        K.layers.Conv1D(4, 3, padding="same")(x))),
    # (batch, channels, steps): a Dense on the last axis, then the statistics per axis 1
    "rank3_first": lambda K: _model(K, (4, 5), lambda x: batch_norm(K, 1)(
        K.layers.Dense(3)(x))),
    # (batch, time, height, width, channels)
    "rank5_last": lambda K: _model(K, (2, 4, 4, 2), lambda x: batch_norm(K, -1)(
        K.layers.TimeDistributed(K.layers.Conv2D(3, 3, padding="same"))(x))),
    # (batch, channels, depth, height, width)
    "rank5_first": lambda K: _model(K, (3, 2, 3, 4), lambda x: batch_norm(K, 1)(x)),
}


def _model(K, shape, body):
    x = K.Input(shape)
    return K.Model(x, head(K, body(x)))


@pytest.mark.parametrize("name", sorted(MODELS))
def test_batch_normalization_against_keras(name):
    check_against_keras(MODELS[name], optimizers=["sgd"], steps=1)


@pytest.mark.parametrize("shared_axes", [None, [1, 2, 3]])
def test_prelu_on_a_5d_input_against_keras(shared_axes):
    """The other per-channel layer with a weight: PReLU's alpha on a (batch, time, height,
    width, channels) tensor."""
    def build(K):
        x = K.Input((2, 3, 3, 2))
        prelu = K.layers.PReLU(alpha_initializer="random_uniform", shared_axes=shared_axes)
        return K.Model(x, head(K, prelu(x)))

    check_against_keras(build, optimizers=["sgd"], steps=1)


def test_the_issue_model_builds_with_its_weights():
    x = kk.Input((500, 1))
    y = kk.layers.BatchNormalization()(kk.layers.Conv1D(64, 3, padding="same")(x))
    model = kk.Model(x, y)
    assert model.outputs[0].shape == (None, 500, 64)
    assert [w.shape for w in model.layers[-1].weights] == [(64,)] * 4
    out = model.predict(np.ones((2, 500, 1), np.float32), verbose=0)
    assert out.shape == (2, 500, 64)


@pytest.mark.parametrize("shape, axis", [((3, 4, 5), 2), ((2, 3, 4, 5), 2), ((2, 3, 4, 5), 3)])
def test_an_axis_between_is_refused(shape, axis):
    x = kk.Input(shape)
    with pytest.raises(ValueError, match=r"BatchNormalization '.*argument axis"):
        kk.layers.BatchNormalization(axis=axis)(x)
