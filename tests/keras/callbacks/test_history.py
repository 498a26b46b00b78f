"""The History fit returns when no epoch runs (epochs=0, or a BackupAndRestore that resumes
after the last epoch): an empty one of this run, as Keras 3's, not the last run's or None."""

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).parents[1]))
from keras_oracle import real_keras  # noqa: E402

from kiln import keras as kk  # noqa: E402

X = np.random.default_rng(0).normal(size=(8, 4)).astype(np.float32)
Y = np.random.default_rng(1).normal(size=(8, 2)).astype(np.float32)


def model(K):
    inputs = K.Input((4,))
    built = K.Model(inputs, K.layers.Dense(2)(inputs))
    built.compile(optimizer="sgd", loss="mse")
    return built


def no_epoch_runs(K, backup_dir):
    """(history, epoch, params, is model.history) of fit(epochs=0) after a fit that trained,
    and of a fit resumed by BackupAndRestore after its last epoch."""
    results = []
    trained = model(K)
    trained.fit(X, Y, epochs=2, verbose=0)
    history = trained.fit(X, Y, epochs=0, verbose=0)
    results.append((history.history, history.epoch, history.params,
                    history is trained.history))
    resumed = model(K)
    for _ in range(2):
        backup = K.callbacks.BackupAndRestore(str(backup_dir), delete_checkpoint=False)
        history = resumed.fit(X, Y, epochs=2, verbose=0, callbacks=[backup])
    results.append((history.history, history.epoch, history.params,
                    history is resumed.history))
    return results


def test_no_epoch_gives_an_empty_history_as_keras(tmp_path):
    keras = real_keras()
    got = no_epoch_runs(kk, tmp_path / "kiln")
    assert got == no_epoch_runs(keras, tmp_path / "keras")
    assert got[0] == ({}, [], {"verbose": 0, "epochs": 0, "steps": 1}, True)
    assert got[1][:2] == ({}, [])


@pytest.mark.usefixtures("kiln_keras_env")
def test_history_callback_given_to_evaluate_becomes_model_history():
    """Keras' CallbackList makes any History it holds the model's history."""
    trained = model(kk)
    history = kk.callbacks.History()
    trained.evaluate(X, Y, verbose=0, callbacks=[history])
    assert trained.history is history
