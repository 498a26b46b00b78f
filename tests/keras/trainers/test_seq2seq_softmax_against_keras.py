"""addition_rnn.py's model against real Keras 3 (JAX backend): LSTM encoder, RepeatVector,
LSTM decoder returning sequences, TimeDistributed(Dense) and a separate softmax Activation,
so the output is (batch, steps, classes) and categorical / sparse categorical cross-entropy and
"accuracy" are averaged over the batch and the steps, as Keras does. The batch logs, history,
weights after each epoch and evaluate() must agree (fit_oracle.py). Also Keras 2's
Sequential.predict_classes on such an output: the argmax per step."""

import warnings

import numpy as np
import pytest
from fit_oracle import check_fit_against_keras

from kiln import keras as kk

STEPS_IN, STEPS_OUT, CLASSES = 5, 3, 4


def seq2seq(K):
    inputs = K.Input((STEPS_IN, CLASSES))
    x = K.layers.LSTM(6)(inputs)
    x = K.layers.RepeatVector(STEPS_OUT)(x)
    x = K.layers.LSTM(6, return_sequences=True)(x)
    x = K.layers.TimeDistributed(K.layers.Dense(CLASSES))(x)
    return K.Model(inputs, K.layers.Activation("softmax")(x))


@pytest.fixture(autouse=True)
def quiet_jax():
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", category=DeprecationWarning)
        yield


@pytest.mark.parametrize("loss", ["categorical_crossentropy", "sparse_categorical_crossentropy"])
def test_per_step_crossentropy_and_accuracy_train_as_keras(loss):
    def make_y(rng, count):
        ids = rng.integers(0, CLASSES, (count, STEPS_OUT))
        return ids if loss.startswith("sparse") else np.eye(CLASSES, dtype=np.float32)[ids]

    check_fit_against_keras(seq2seq, lambda K: dict(loss=loss, metrics=["accuracy"]), make_y,
                            epochs=1, batch_size=3, learning_rate=0.5)


def test_predict_classes_is_the_argmax_per_step(kiln_keras_env):
    model = kk.Sequential([kk.layers.LSTM(6, input_shape=(STEPS_IN, CLASSES)),
                           kk.layers.RepeatVector(STEPS_OUT),
                           kk.layers.TimeDistributed(kk.layers.Dense(CLASSES)),
                           kk.layers.Activation("softmax")])
    x = np.random.default_rng(0).uniform(-1, 1, (7, STEPS_IN, CLASSES)).astype(np.float32)
    classes = model.predict_classes(x, verbose=0)
    assert classes.shape == (7, STEPS_OUT)
    np.testing.assert_array_equal(classes, model.predict(x, verbose=0).argmax(axis=-1))


def test_predict_classes_thresholds_a_single_sigmoid(kiln_keras_env):
    model = kk.Sequential([kk.layers.Dense(1, activation="sigmoid", input_shape=(2,))])
    model.set_weights([np.array([[1.0], [0.0]], np.float32), np.zeros(1, np.float32)])
    x = np.array([[-2.0, 5.0], [3.0, -1.0]], np.float32)
    classes = model.predict_classes(x)
    assert classes.dtype == np.int32
    np.testing.assert_array_equal(classes, [[0], [1]])
    np.testing.assert_allclose(model.predict_proba(x), model.predict(x, verbose=0))
