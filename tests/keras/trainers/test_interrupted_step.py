"""Ctrl-C in the middle of a training step lands after the step: every weight, the moving
statistics and the optimizer's iterations are one whole step further, never some of them.

SIGINT is sent from inside the optimizer update (after its first kernel, i.e. with some or all
weights updated and `iterations` not yet counted), so the test is deterministic."""

import signal

import numpy as np
import pytest

from kiln import keras
from kiln.keras.layers import BatchNormalization, Dense

pytestmark = pytest.mark.usefixtures("kiln_keras_env")

X = np.random.default_rng(0).normal(size=(16, 4)).astype(np.float32)
Y = np.arange(16) % 3


def model_and_copy(clipnorm):
    models = []
    for _ in range(2):
        model = keras.Sequential([Dense(8, activation="relu", input_shape=(4,)),
                                  BatchNormalization(), Dense(3, activation="softmax")])
        model.compile(loss="sparse_categorical_crossentropy", metrics=["accuracy"],
                      optimizer=keras.optimizers.SGD(learning_rate=0.1, momentum=0.9,
                                                     clipnorm=clipnorm))
        models.append(model)
    models[1].set_weights(models[0].get_weights())
    return models


def interrupt_during_the_update(model):
    """SIGINT once, right after the update's first kernel (of one weight with clipnorm)."""
    updater = model.optimizer._updater
    run = updater._run
    sent = []

    def run_then_interrupt(*args):
        run(*args)
        if not sent:
            sent.append(True)
            signal.raise_signal(signal.SIGINT)

    updater._run = run_then_interrupt


@pytest.mark.parametrize("clipnorm", [None, 1.0], ids=["one kernel", "one kernel per weight"])
def test_ctrl_c_during_the_update_stops_fit_after_the_whole_step(clipnorm):
    model, reference = model_and_copy(clipnorm)
    interrupt_during_the_update(model)
    with pytest.raises(KeyboardInterrupt):
        model.fit(X, Y, batch_size=8, epochs=2, shuffle=False, verbose=0)
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    reference.train_on_batch(X[:8], Y[:8])  # the first batch, one whole step
    assert int(model.optimizer.iterations.numpy()) == 1
    for got, expected in zip(model.get_weights(), reference.get_weights(), strict=True):
        np.testing.assert_array_equal(got, expected)


def test_ctrl_c_during_train_on_batch_counts_the_batch_in_its_metrics():
    model, reference = model_and_copy(None)
    interrupt_during_the_update(model)
    with pytest.raises(KeyboardInterrupt):
        model.train_on_batch(X[:8], Y[:8])
    logs = reference.train_on_batch(X[:8], Y[:8], return_dict=True)
    del model.optimizer._updater._run  # the class's kernel again: no more interrupts
    assert model.train_on_batch(X[8:], Y[8:], return_dict=True) == \
        reference.train_on_batch(X[8:], Y[8:], return_dict=True) != logs
    for got, expected in zip(model.get_weights(), reference.get_weights(), strict=True):
        np.testing.assert_array_equal(got, expected)
