"""LearningRateScheduler and ReduceLROnPlateau: the rates they set, epoch by epoch, against
real Keras driven with the same logs; their `learning_rate` log entry; and their effect on a
real kiln fit."""

import callback_drivers
import numpy as np
import pytest
from callback_drivers import FakeModel, drive_epochs

from kiln import keras as kk
from kiln.keras.callbacks import LearningRateScheduler, ReduceLROnPlateau


class Float32Optimizer:
    """Stores its rate as float32, as both frameworks' optimizer variables do."""

    def __init__(self, learning_rate):
        self.learning_rate = learning_rate

    @property
    def learning_rate(self):
        return self._rate

    @learning_rate.setter
    def learning_rate(self, value):
        self._rate = np.float32(value)


def kiln_model(learning_rate):
    model = FakeModel()
    model.optimizer = Float32Optimizer(learning_rate)
    return model


def keras_model(learning_rate):
    model = FakeModel()
    model.optimizer = callback_drivers.keras_optimizer(learning_rate)
    return model


def rates(callback, model, epoch_logs):
    """The learning rate after each epoch and each epoch's logged `learning_rate`."""
    after, logged = [], []
    record = kk.callbacks.LambdaCallback(
        on_epoch_end=lambda epoch, logs: (after.append(float(model.optimizer.learning_rate)),
                                          logged.append(logs.get("learning_rate"))))
    callbacks = kk.callbacks.CallbackList([callback, record])
    drive_epochs(callbacks, model, epoch_logs)
    return after, logged


PLATEAU_CASES = [
    # cooldown: after a reduction, `cooldown` epochs are not counted
    (dict(factor=0.5, patience=1, cooldown=2), [1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0]),
    # min_delta: 0.95 is not enough of an improvement on 1.0, 0.5 is
    (dict(factor=0.1, patience=2, min_delta=0.1), [1.0, 0.95, 0.92, 0.5, 0.45, 0.44, 0.2]),
    # min_lr bounds the rate, and a rate at min_lr (in float32) stops reducing
    (dict(factor=0.1, patience=1, min_lr=1e-3), [1.0] * 6),
    (dict(factor=0.5, patience=1, mode="max", cooldown=1), [0.1, 0.2, 0.1, 0.1, 0.3, 0.2, 0.2]),
]


@pytest.mark.parametrize("arguments, values", PLATEAU_CASES)
def test_reduce_lr_on_plateau_as_keras(arguments, values):
    keras = callback_drivers.keras_oracle.real_keras()
    logs = [{"val_loss": v} for v in values]
    mine = rates(ReduceLROnPlateau(**arguments), kiln_model(0.1), logs)
    theirs = rates(keras.callbacks.ReduceLROnPlateau(**arguments), keras_model(0.1), logs)
    assert mine == theirs
    assert len(set(mine[0])) > 1  # every case reduces at least once


def test_reduce_lr_on_plateau_arguments():
    with pytest.raises(ValueError, match="factor >= 1.0"):
        ReduceLROnPlateau(factor=1.0)
    with pytest.warns(UserWarning, match="epsilon is deprecated"):
        assert ReduceLROnPlateau(epsilon=0.5).min_delta == 0.5  # Keras 2's name
    with pytest.raises(TypeError, match=r"unexpected keyword argument\(s\) \['patients'\]"):
        ReduceLROnPlateau(patients=3)


def keras_2_schedule(epoch):
    """The cifar10_resnet.py example's schedule (one argument)."""
    rate = 1e-3
    if epoch > 3:
        rate *= 0.5e-3
    elif epoch > 2:
        rate *= 1e-2
    elif epoch > 1:
        rate *= 1e-1
    return rate


@pytest.mark.parametrize("schedule", [keras_2_schedule, lambda epoch, lr: lr * 0.5,
                                      lambda epoch, lr=None: 0.1 / (epoch + 1)])
def test_learning_rate_scheduler_as_keras(schedule):
    keras = callback_drivers.keras_oracle.real_keras()
    logs = [{"loss": 1.0}] * 5
    mine = rates(LearningRateScheduler(schedule), kiln_model(0.1), logs)
    theirs = rates(keras.callbacks.LearningRateScheduler(schedule), keras_model(0.1), logs)
    assert mine == theirs


def test_learning_rate_scheduler_wants_a_float(capsys):
    with pytest.raises(ValueError, match="should be a float. Got: 1"):
        drive_epochs(LearningRateScheduler(lambda epoch: 1), kiln_model(0.1), [{}])
    drive_epochs(LearningRateScheduler(lambda epoch: 0.25, verbose=1), kiln_model(0.1), [{}])
    assert "Epoch 1: LearningRateScheduler setting learning rate to 0.25." in \
        capsys.readouterr().out
    with pytest.raises(ValueError, match="call model.compile"):
        model = FakeModel()
        model.optimizer = None
        drive_epochs(LearningRateScheduler(lambda epoch: 0.25), model, [{}])


def small_fit(callbacks, epochs=3):
    from model_helpers import quadrant_data, small_cnn

    x, y = quadrant_data(16)
    model = small_cnn()
    model.compile(optimizer=kk.optimizers.SGD(learning_rate=0.1),
                  loss="categorical_crossentropy")
    weights = [model.get_weights()]
    record = kk.callbacks.LambdaCallback(
        on_epoch_end=lambda epoch, logs: weights.append(model.get_weights()))
    history = model.fit(x, y, batch_size=8, epochs=epochs, verbose=0, shuffle=False,
                        callbacks=[*callbacks, record])
    return model, history, weights


def test_reduce_lr_on_plateau_in_a_real_fit_logs_learning_rate():
    # loss never improves by 10, so every epoch after the first halves the rate; as in
    # Keras, an epoch logs the rate it trained with (logged before the reduction)
    reduce = ReduceLROnPlateau(monitor="loss", factor=0.5, patience=1, min_delta=10)
    model, history, _ = small_fit([reduce], epochs=4)
    np.testing.assert_allclose(history.history["learning_rate"], [0.1, 0.1, 0.05, 0.025],
                               rtol=1e-6)
    assert float(model.optimizer.learning_rate) == pytest.approx(0.0125, rel=1e-6)


def test_learning_rate_scheduler_changes_the_training_step():
    # a rate of 0 in the second epoch leaves that epoch's weights where the first left them
    scheduler = LearningRateScheduler(lambda epoch: 0.0 if epoch == 1 else 0.1)
    _, history, weights = small_fit([scheduler])
    assert history.history["learning_rate"] == pytest.approx([0.1, 0.0, 0.1])
    for before, after in zip(weights[1], weights[2], strict=True):
        np.testing.assert_array_equal(before, after)
    assert any(np.any(a != b) for a, b in zip(weights[2], weights[3], strict=True))
    assert any(np.any(a != b) for a, b in zip(weights[0], weights[1], strict=True))


def test_the_progress_line_shows_the_learning_rate(capsys):
    """As Keras: the LR callbacks run before the progress bar, which prints their entry."""
    from model_helpers import quadrant_data, small_cnn

    x, y = quadrant_data(16)
    model = small_cnn()
    model.compile(optimizer=kk.optimizers.SGD(learning_rate=0.1),
                  loss="categorical_crossentropy")
    model.fit(x, y, batch_size=8, epochs=2, verbose=2,
              callbacks=[LearningRateScheduler(lambda epoch: 0.1 / (epoch + 1))])
    lines = [line for line in capsys.readouterr().out.splitlines() if "loss" in line]
    assert len(lines) == 2
    assert lines[0].endswith(" - learning_rate: 0.1000")
    assert lines[1].endswith(" - learning_rate: 0.0500")
