"""read_history reads back what CSVLogger and TensorBoard wrote during the same epochs: the
same per-epoch values under History's names (`loss`, `val_loss`, ...)."""

import math

import pytest

from kiln.keras.callbacks import CSVLogger, TensorBoard
from kiln.plot import read_history

EPOCH_LOGS = [{"loss": 1.5, "accuracy": 0.25, "val_loss": 1.75, "val_accuracy": 0.5},
              {"loss": 0.75, "accuracy": 0.5, "val_loss": 1.25, "val_accuracy": 0.5},
              {"loss": 0.5, "accuracy": 0.75, "val_loss": 1.0, "val_accuracy": 0.75}]


class Model:
    """What the two callbacks read from a model: an optimizer with a learning rate."""

    class optimizer:  # noqa: N801
        learning_rate = 0.125
        iterations = 0


def drive(callback, logs=EPOCH_LOGS):
    callback.set_model(Model())
    callback.on_train_begin({})
    for epoch, epoch_logs in enumerate(logs):
        callback.on_epoch_begin(epoch, {})
        callback.on_epoch_end(epoch, dict(epoch_logs))
    callback.on_train_end({})


def expected(names):
    return {name: [logs[name] for logs in EPOCH_LOGS] for name in names}


@pytest.mark.parametrize("separator", [",", ";"])
def test_csv_logger_file(tmp_path, separator):
    drive(CSVLogger(tmp_path / "log.csv", separator=separator))
    epochs, history = read_history(tmp_path / "log.csv")
    assert epochs == [0, 1, 2]
    assert history == expected(["accuracy", "loss", "val_accuracy", "val_loss"])


def test_csv_without_validation_drops_the_all_na_columns(tmp_path):
    drive(CSVLogger(tmp_path / "log.csv"), [{"loss": 2.0}, {"loss": 1.0}])
    assert "val_loss" in (tmp_path / "log.csv").read_text()  # Keras writes NA columns
    assert read_history(tmp_path / "log.csv") == ([0, 1], {"loss": [2.0, 1.0]})


def test_tensorboard_log_dir(tmp_path):
    drive(TensorBoard(tmp_path / "logs", write_graph=False))
    epochs, history = read_history(tmp_path / "logs")
    assert epochs == [0, 1, 2]
    assert history == expected(["loss", "accuracy", "val_loss", "val_accuracy"]) | {
        "learning_rate": [0.125] * 3}


def test_tensorboard_epochs_without_validation_are_nan(tmp_path):
    logs = [{"loss": 1.0}, {"loss": 0.5, "val_loss": 0.75}]
    drive(TensorBoard(tmp_path, write_graph=False), logs)
    _, history = read_history(tmp_path)
    assert math.isnan(history["val_loss"][0]) and history["val_loss"][1] == 0.75


def test_bad_sources_are_named(tmp_path):
    with pytest.raises(FileNotFoundError, match="no CSV file or TensorBoard log directory"):
        read_history(tmp_path / "missing.csv")
    (tmp_path / "other.csv").write_text("a,b\n1,2\n")
    with pytest.raises(ValueError, match="not a CSVLogger file"):
        read_history(tmp_path / "other.csv")
    with pytest.raises(ValueError, match="no epoch_<metric> scalars"):
        read_history(tmp_path)
