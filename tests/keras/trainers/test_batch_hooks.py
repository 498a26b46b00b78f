"""fit() and evaluate() skip a batch hook no callback overrides, and with it the per-batch
read-back of the loss and metrics into a logs dict nothing would see; a callback that does
override it (a subclass's method, the old on_batch_end alias, a LambdaCallback function) gets
the same logs at every batch as before, and training is the same either way."""

import numpy as np
import pytest

from kiln import keras as kk
from kiln.keras.trainers.batch_steps import BatchRunner

X = np.random.default_rng(0).normal(size=(40, 4)).astype(np.float32)
Y = (np.random.default_rng(1).random(40) > 0.5).astype(np.float32)

pytestmark = pytest.mark.usefixtures("kiln_keras_env")


def model():
    kk.utils.set_random_seed(3)
    inputs = kk.Input((4,))
    built = kk.Model(inputs, kk.layers.Dense(1, activation="sigmoid")(inputs))
    built.compile(optimizer="sgd", loss="binary_crossentropy", metrics=["accuracy"])
    return built


@pytest.fixture
def log_reads(monkeypatch):
    """How many times a runner built a logs dict."""
    calls = []
    original = BatchRunner.logs

    def counted(self):
        calls.append(self.kind)
        return original(self)
    monkeypatch.setattr(BatchRunner, "logs", counted)
    return calls


def test_fit_without_batch_readers_reads_logs_once_per_epoch(log_reads):
    history = model().fit(X, Y, batch_size=8, epochs=2, verbose=0, shuffle=False)
    assert log_reads == ["fit", "fit"]  # 5 batches an epoch, read at each epoch's end
    assert set(history.history) == {"loss", "accuracy"}
    model().evaluate(X, Y, batch_size=8, verbose=0)
    assert log_reads[2:] == ["evaluate"]


class Recorder(kk.callbacks.Callback):
    def __init__(self):
        super().__init__()
        self.batches = []

    def on_train_batch_end(self, batch, logs=None):
        self.batches.append((batch, dict(logs)))


class OldRecorder(kk.callbacks.Callback):
    """Keras 2's name for the hook, which the base on_train_batch_end forwards to."""

    def __init__(self):
        super().__init__()
        self.batches = []

    def on_batch_end(self, batch, logs=None):
        self.batches.append((batch, dict(logs)))


def test_batch_logs_reach_every_kind_of_override(log_reads):
    new, old, lambdas, begins = Recorder(), OldRecorder(), [], []
    lam = kk.callbacks.LambdaCallback(
        on_train_batch_end=lambda batch, logs: lambdas.append((batch, dict(logs))))
    begin = kk.callbacks.LambdaCallback(on_train_batch_begin=lambda batch, logs: begins.append(
        batch))
    trained = model()
    history = trained.fit(X, Y, batch_size=8, epochs=2, verbose=0, shuffle=False,
                          callbacks=[new, old, lam, begin])
    assert [b for b, _ in new.batches] == [0, 1, 2, 3, 4] * 2
    assert begins == [0, 1, 2, 3, 4] * 2
    assert new.batches == old.batches == lambdas
    # the last batch of each epoch logs what the epoch ends with
    assert new.batches[4][1] == {k: v[0] for k, v in history.history.items()}
    assert new.batches[9][1] == {k: v[1] for k, v in history.history.items()}
    assert len({logs["loss"] for _, logs in new.batches}) == 10  # a running mean, per batch

    # the same training without any reader: the same epoch logs and weights
    quiet = model()
    quiet_history = quiet.fit(X, Y, batch_size=8, epochs=2, verbose=0, shuffle=False)
    assert quiet_history.history == history.history
    for a, b in zip(quiet.get_weights(), trained.get_weights(), strict=True):
        np.testing.assert_array_equal(a, b)


def test_evaluate_batch_logs_reach_a_test_batch_override():
    seen = []

    class TestRecorder(kk.callbacks.Callback):
        def on_test_batch_end(self, batch, logs=None):
            seen.append((batch, dict(logs)))

    trained = model()
    result = trained.evaluate(X, Y, batch_size=8, verbose=0, return_dict=True,
                              callbacks=[TestRecorder()])
    assert [b for b, _ in seen] == [0, 1, 2, 3, 4]
    assert seen[-1][1] == result


def test_overrides_names_only_hooks_that_do_something():
    plain = kk.callbacks.CallbackList([kk.callbacks.History()])
    assert not plain.overrides("on_train_batch_end")
    assert not plain.overrides("on_train_batch_begin")
    assert not plain.overrides("on_test_batch_end")
    assert kk.callbacks.CallbackList([OldRecorder()]).overrides("on_train_batch_end")
    assert kk.callbacks.CallbackList([kk.callbacks.ProgbarLogger()]).overrides(
        "on_train_batch_end")
