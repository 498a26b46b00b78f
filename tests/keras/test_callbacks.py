import io

import pytest

from kiln.keras import utils
from kiln.keras.callbacks import (
    Callback,
    CallbackList,
    EarlyStopping,
    History,
    LambdaCallback,
    ProgbarLogger,
)


class FakeClock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


@pytest.fixture
def clock(monkeypatch):
    fake = FakeClock()
    monkeypatch.setattr(utils, "_clock", fake)
    return fake


class FakeModel:
    """Just enough of a model for callbacks: weights and stop_training."""

    def __init__(self):
        self.weights = [0]
        self.stop_training = False

    def get_weights(self):
        return list(self.weights)

    def set_weights(self, weights):
        self.weights = list(weights)


def run_epoch(callbacks, clock, epoch, batches, epoch_logs):
    """Drives `callbacks` like fit(): `batches` is [(time, logs), ...]."""
    callbacks.on_epoch_begin(epoch)
    for batch, (now, logs) in enumerate(batches):
        clock.now = now
        callbacks.on_train_batch_begin(batch)
        callbacks.on_train_batch_end(batch, logs)
    callbacks.on_epoch_end(epoch, epoch_logs)


# ProgbarLogger

EPOCH_BATCHES = [
    (1.0, {"loss": 1.0, "accuracy": 0.5, "size": 32}),
    (1.5, {"loss": 0.5, "accuracy": 0.75, "size": 32}),
    (2.0, {"loss": 0.25, "accuracy": 1.0, "size": 16}),
]
EPOCH_LOGS = {"loss": 0.65, "accuracy": 0.7, "val_loss": 0.3,
              "val_accuracy": 0.9}


@pytest.mark.parametrize("verbose", [1, 2, "auto"])
def test_one_line_per_epoch_when_not_a_terminal(clock, verbose):
    stream = io.StringIO()
    logger = ProgbarLogger(stream=stream)
    callbacks = CallbackList([logger], verbose=verbose, epochs=2, steps=3)
    callbacks.on_train_begin()
    run_epoch(callbacks, clock, 0, EPOCH_BATCHES, EPOCH_LOGS)
    clock.now = 10.0
    run_epoch(callbacks, clock, 1, [(10.5, {"loss": 0.125, "size": 8})] * 3,
              {"val_loss": 0.0001})
    callbacks.on_train_end()
    # Batch metrics are averaged per sample: (32*.5 + 32*.75 + 16*1) / 80.
    assert stream.getvalue() == (
        "Epoch 1/2\n"
        "3/3 - 2s - 500ms/step - loss: 0.6500 - accuracy: 0.7000"
        " - val_loss: 0.3000 - val_accuracy: 0.9000\n"
        "Epoch 2/2\n"
        "3/3 - 0s - 0s/step - loss: 0.1250 - val_loss: 1.0000e-04\n")
    assert "\r" not in stream.getvalue()


def test_dynamic_bar_in_fit(clock):
    stream = io.StringIO()
    logger = ProgbarLogger(dynamic=True, stream=stream)
    logger.set_params({"verbose": 1, "epochs": 1, "steps": 3})
    run_epoch(logger, clock, 0, EPOCH_BATCHES, EPOCH_LOGS)
    output = stream.getvalue()
    # Keras 3's bar (20 wide, done in green, the rest in white), ETA then time per step
    assert output.startswith(
        "Epoch 1/1\n"
        "\r\x1b[1m1/3\x1b[0m \x1b[32m" + "━" * 6 + "\x1b[0m\x1b[37m" + "━" * 14 + "\x1b[0m"
        " \x1b[1m2s\x1b[0m 1s/step - loss: 1.0000 - accuracy: 0.5000")
    assert output.endswith(
        "\r\x1b[1m3/3\x1b[0m \x1b[32m" + "━" * 20 + "\x1b[0m\x1b[37m\x1b[0m"
        " \x1b[1m2s\x1b[0m 500ms/step - loss: 0.6500 - accuracy: 0.7000"
        " - val_loss: 0.3000 - val_accuracy: 0.9000\n")


def test_verbose_0_prints_nothing(clock, capsys):
    logger = ProgbarLogger()
    logger.set_params({"verbose": 0, "epochs": 1, "steps": 3})
    run_epoch(logger, clock, 0, EPOCH_BATCHES, EPOCH_LOGS)
    assert capsys.readouterr().out == ""


def test_writes_to_stdout_by_default(clock, capsys):
    logger = ProgbarLogger()
    logger.set_params({"verbose": 2, "epochs": 1, "steps": None})
    run_epoch(logger, clock, 0, [(0.0, {"loss": 3.0})] * 2, {})
    assert capsys.readouterr().out == (
        "Epoch 1/1\n2/2 - 0s - 0s/step - loss: 3.0000\n")


def test_stateful_metrics_show_last_value(clock):
    stream = io.StringIO()
    logger = ProgbarLogger(stateful_metrics=["lr"], stream=stream)
    logger.set_params({"verbose": 2, "epochs": 1, "steps": 2})
    run_epoch(logger, clock, 0,
              [(0.0, {"lr": 0.5, "loss": 1.0}), (0.0, {"lr": 0.25,
                                                      "loss": 2.0})],
              {"lr": 0.125})
    assert stream.getvalue().endswith(" - lr: 0.1250 - loss: 1.5000\n")


def test_evaluate_outside_fit_prints_a_line(clock):
    stream = io.StringIO()
    logger = ProgbarLogger(stream=stream)
    logger.set_params({"verbose": 1, "epochs": 1, "steps": 2})
    logger.on_test_begin()
    logger.on_test_batch_end(0, {"loss": 1.0})
    logger.on_test_batch_end(1, {"loss": 0.0})
    logger.on_test_end({"loss": 0.5})
    assert stream.getvalue() == "2/2 - 0s - 0s/step - loss: 0.5000\n"


def test_validation_inside_fit_draws_no_bar(clock):
    stream = io.StringIO()
    logger = ProgbarLogger(stream=stream)
    logger.set_params({"verbose": 1, "epochs": 1, "steps": 1})
    logger.on_train_begin()
    logger.on_epoch_begin(0)
    logger.on_train_batch_end(0, {"loss": 1.0})
    logger.on_test_begin()
    logger.on_test_batch_end(0, {"loss": 9.0})
    logger.on_test_end({"loss": 9.0})
    logger.on_epoch_end(0, {"val_loss": 9.0})
    assert stream.getvalue() == (
        "Epoch 1/1\n1/1 - 0s - 0s/step - loss: 1.0000 - val_loss: 9.0000\n")


# History and CallbackList

def test_history_records_epoch_logs():
    model = FakeModel()
    history = History()
    callbacks = CallbackList([history], model=model, verbose=0, epochs=2,
                             steps=5)
    callbacks.on_train_begin()
    callbacks.on_epoch_end(0, {"loss": 0.5, "val_loss": 0.6})
    callbacks.on_epoch_end(1, {"loss": 0.25, "val_loss": 0.4})
    callbacks.on_train_end()
    assert history.history == {"loss": [0.5, 0.25], "val_loss": [0.6, 0.4]}
    assert history.epoch == [0, 1]
    assert history.params == {"verbose": 0, "epochs": 2, "steps": 5}
    assert history.model is model
    assert model.history is history


def test_callback_list_dispatches_in_order_and_adds_defaults():
    calls = []

    class Recorder(Callback):
        def __init__(self, name):
            super().__init__()
            self.name = name

        def on_epoch_end(self, epoch, logs=None):
            calls.append((self.name, epoch, logs))

        def on_batch_end(self, batch, logs=None):  # old-style alias
            calls.append((self.name, "batch", batch))

    callbacks = CallbackList([Recorder("a"), Recorder("b")],
                             add_history=True, add_progbar=True)
    assert [type(c) for c in callbacks.callbacks[2:]] == [History,
                                                          ProgbarLogger]
    callbacks.on_train_batch_end(3, {"loss": 1.0})
    callbacks.on_epoch_end(0, {"loss": 1.0})
    assert calls == [("a", "batch", 3), ("b", "batch", 3),
                     ("a", 0, {"loss": 1.0}), ("b", 0, {"loss": 1.0})]
    history = History()
    assert CallbackList([history], add_history=True).callbacks == [history]


# EarlyStopping

def run_early_stopping(callback, values, monitor="val_loss"):
    """Returns (epochs run, model) for a fit whose monitor takes `values`."""
    model = FakeModel()
    callback.set_model(model)
    callback.on_train_begin()
    epochs_run = 0
    for epoch, value in enumerate(values):
        model.weights = [epoch]
        callback.on_epoch_end(epoch, {monitor: value})
        epochs_run += 1
        if model.stop_training:
            break
    callback.on_train_end()
    return epochs_run, model


def test_early_stopping_patience():
    callback = EarlyStopping(patience=2)
    epochs_run, model = run_early_stopping(callback, [1.0, 0.5, 0.6, 0.7, 0.1])
    assert epochs_run == 4
    assert callback.stopped_epoch == 3
    assert callback.best == 0.5
    assert model.weights == [3]  # not restored


def test_early_stopping_min_delta_and_patience_zero():
    callback = EarlyStopping(min_delta=0.1)
    epochs_run, _ = run_early_stopping(callback, [1.0, 0.95, 0.5])
    assert epochs_run == 2


def test_early_stopping_restores_best_weights():
    callback = EarlyStopping(patience=1, restore_best_weights=True)
    epochs_run, model = run_early_stopping(callback, [1.0, 0.2, 0.4, 0.3])
    assert epochs_run == 3
    assert callback.best_epoch == 1
    assert model.weights == [1]


def test_early_stopping_mode_auto_and_max():
    """As Keras 3, "auto" stays "auto" and resolves at the first epoch end."""
    for monitor, increasing in (("val_accuracy", True), ("loss", False), ("val_mae", False),
                                ("val_acc", True)):
        callback = EarlyStopping(monitor=monitor)
        run_early_stopping(callback, [0.5], monitor=monitor)
        assert callback.mode == "auto"
        assert callback._is_improvement(0.6, 0.5) is increasing
    callback = EarlyStopping(monitor="accuracy", patience=1)
    epochs_run, _ = run_early_stopping(callback, [0.5, 0.9, 0.8, 0.95],
                                       monitor="accuracy")
    assert epochs_run == 3
    with pytest.warns(UserWarning, match="mode 'bogus' is unknown"):
        assert EarlyStopping(mode="bogus").mode == "auto"


def test_early_stopping_baseline():
    # Not beating the baseline keeps the patience count running...
    callback = EarlyStopping(patience=2, baseline=0.5)
    epochs_run, _ = run_early_stopping(callback, [0.9, 0.95, 0.97])
    assert epochs_run == 2
    # ...which otherwise restarts at the first epoch.
    epochs_run, _ = run_early_stopping(EarlyStopping(patience=2),
                                       [0.9, 0.95, 0.97])
    assert epochs_run == 3


def test_early_stopping_missing_metric_warns_and_continues():
    callback = EarlyStopping()
    callback.set_model(FakeModel())
    with pytest.warns(UserWarning, match="`val_loss` which is not available. "
                                         "Available metrics are: loss"):
        callback.on_epoch_end(0, {"loss": 1.0})
    assert callback.model.stop_training is False


def test_early_stopping_verbose_messages(capsys):
    callback = EarlyStopping(verbose=1, restore_best_weights=True)
    run_early_stopping(callback, [1.0, 2.0])
    assert capsys.readouterr().out == (
        "Epoch 2: early stopping\n"
        "Restoring model weights from the end of the best epoch: 1.\n")


# LambdaCallback

def test_lambda_callback_calls_functions():
    calls = []
    callback = LambdaCallback(
        on_epoch_end=lambda epoch, logs: calls.append(("epoch", epoch, logs)),
        on_test_end=lambda logs: calls.append(("test", logs)))
    callbacks = CallbackList([callback])
    callbacks.on_epoch_begin(0)  # not given: no-op
    callbacks.on_epoch_end(0, {"loss": 1.0})
    callbacks.on_test_end({"loss": 2.0})
    assert calls == [("epoch", 0, {"loss": 1.0}), ("test", {"loss": 2.0})]


def test_lambda_callback_rejects_unknown_hooks():
    with pytest.raises(TypeError, match=r"unknown hook\(s\) \['on_epoch_ned'\]"):
        LambdaCallback(on_epoch_ned=print)


def test_every_hook_receives_logs_as_in_keras():
    import numpy as np
    """Keras passes `logs` to every hook, so callbacks written as its docs show them run."""
    from kiln import keras as kk
    seen = []
    callback = kk.callbacks.LambdaCallback(
        on_train_begin=lambda logs: seen.append(("train_begin", logs)),
        on_epoch_begin=lambda epoch, logs: seen.append(("epoch_begin", logs)),
        on_train_batch_begin=lambda batch, logs: seen.append(("batch_begin", logs)),
        on_train_end=lambda logs: seen.append(("train_end", logs)))
    model = kk.Sequential([kk.layers.Dense(2, activation="softmax", input_shape=(3,))])
    model.compile(loss="categorical_crossentropy", optimizer="sgd")
    x = np.ones((4, 3), np.float32)
    model.fit(x, np.eye(2, dtype=np.float32)[[0, 1, 0, 1]], batch_size=4, epochs=1, verbose=0,
              callbacks=[callback])
    assert [name for name, _ in seen] == ["train_begin", "epoch_begin", "batch_begin",
                                          "train_end"]
    assert all(isinstance(logs, dict) for _, logs in seen)


def test_callback_list_accepts_a_callback_list_or_a_lone_callback_as_keras():
    history = History()
    inner = CallbackList([history])
    assert CallbackList(inner, add_history=True).callbacks == [history]
    stopping = EarlyStopping()
    assert CallbackList(stopping).callbacks == [stopping]
