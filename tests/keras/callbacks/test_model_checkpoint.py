"""ModelCheckpoint: file names and save decisions against real Keras driven with the same logs,
Keras 2's `period`, batch-frequency saves, atomic saves, and checkpoints of a real kiln fit
that load back into the model."""

import os

import callback_drivers
import h5py
import numpy as np
import pytest
from callback_drivers import FakeModel, drive_epochs

from kiln import keras as kk
from kiln.keras.callbacks import ModelCheckpoint

VAL_LOSSES = [0.9, 0.7, 0.75, 0.7, 0.4, 0.41, 0.3]


def saved_files(module, folder, epoch_logs, batches=0, **arguments):
    """{file name: the epoch whose weights it holds} after driving the checkpoint."""
    folder.mkdir()
    callback = module.callbacks.ModelCheckpoint(
        filepath=str(folder / arguments.pop("pattern")), save_weights_only=True, **arguments)
    model = FakeModel()
    drive_epochs(callback, model, epoch_logs, batches=batches)
    return {path.name: path.read_text() for path in folder.iterdir()}, callback


CASES = {
    "every epoch": dict(pattern="w-{epoch:02d}-{val_loss:.2f}.weights.h5"),
    "best only, formatted": dict(pattern="w-{epoch:02d}-{val_loss:.2f}.weights.h5",
                                 save_best_only=True),
    "best only, one file": dict(pattern="best.weights.h5", save_best_only=True),
    "best only, mode max": dict(pattern="w-{epoch}.weights.h5", save_best_only=True,
                                mode="max"),
    "threshold": dict(pattern="w-{epoch}.weights.h5", save_best_only=True,
                      initial_value_threshold=0.72),
    "log fields": dict(pattern="{epoch:03d}_{loss:.4f}_{val_loss:.1e}.weights.h5"),
}


@pytest.mark.parametrize("case", CASES)
def test_file_names_and_best_only_decisions_as_keras(case, tmp_path):
    keras = callback_drivers.keras_oracle.real_keras()
    logs = [{"loss": 1.0 / (i + 1), "val_loss": v} for i, v in enumerate(VAL_LOSSES)]
    mine, my_callback = saved_files(kk, tmp_path / "kiln", logs, **dict(CASES[case]))
    theirs, their_callback = saved_files(keras, tmp_path / "keras", logs, **dict(CASES[case]))
    assert mine == theirs
    assert my_callback.best == their_callback.best
    assert mine  # every case saves something


def test_batch_frequency_names_as_keras(tmp_path):
    keras = callback_drivers.keras_oracle.real_keras()
    logs = [{"loss": 0.5}] * 3
    arguments = dict(pattern="e{epoch}-b{batch}.weights.h5", save_freq=3)
    mine, _ = saved_files(kk, tmp_path / "kiln", logs, batches=4, **dict(arguments))
    theirs, _ = saved_files(keras, tmp_path / "keras", logs, batches=4, **dict(arguments))
    assert mine == theirs
    assert sorted(mine) == ["e1-b3.weights.h5", "e2-b2.weights.h5", "e3-b1.weights.h5",
                            "e3-b4.weights.h5"]


def test_keras_2_period_saves_every_n_epochs(tmp_path):
    files, _ = saved_files(kk, tmp_path / "p", [{"val_loss": v} for v in VAL_LOSSES],
                           pattern="w-{epoch}.weights.h5", period=3)
    assert sorted(files) == ["w-3.weights.h5", "w-6.weights.h5"]
    with pytest.raises(ValueError, match="argument period"):
        ModelCheckpoint("w.weights.h5", save_freq=5, period=2)


def test_filepath_arguments_are_checked_as_keras():
    with pytest.raises(ValueError, match="must end in `.weights.h5`"):
        ModelCheckpoint("w.keras", save_weights_only=True)
    with pytest.raises(ValueError, match="must end in `.keras`"):
        ModelCheckpoint("model.weights.json")
    with pytest.raises(ValueError, match="Unrecognized save_freq: batch"):
        ModelCheckpoint("w.weights.h5", save_freq="batch")
    ModelCheckpoint("keras2-style.h5", save_weights_only=True)  # a Keras 2 spelling
    checkpoint = ModelCheckpoint("x-{epoch}-{nope}.weights.h5", save_weights_only=True)
    with pytest.raises(KeyError, match="Failed to format this callback filepath"):
        drive_epochs(checkpoint, FakeModel(), [{"val_loss": 1.0}])


def test_whole_model_checkpoints_load_back(tmp_path):
    from model_helpers import compiled_cnn, quadrant_data

    from kiln.keras.saving import load_model

    x, y = quadrant_data(16)
    model = compiled_cnn()
    model.fit(x, y, batch_size=8, epochs=2, verbose=0, validation_split=0.25,
              callbacks=[ModelCheckpoint(str(tmp_path / "m{epoch}.keras"))])
    assert sorted(os.listdir(tmp_path)) == ["m1.keras", "m2.keras"]
    np.testing.assert_allclose(load_model(tmp_path / "m2.keras").predict(x), model.predict(x),
                               rtol=1e-6, atol=1e-7)


def test_a_failing_save_leaves_the_previous_checkpoint(tmp_path):
    from model_helpers import compiled_cnn

    original = h5py.Group.__setitem__
    writes = []

    def failing_write(group, key, value):
        """An HDF5 write that dies half-way through the file (disk full)."""
        writes.append(key)
        if len(writes) == 3:
            raise OSError("disk full")
        original(group, key, value)

    path = tmp_path / "best.weights.h5"
    path.write_text("previous")
    checkpoint = ModelCheckpoint(str(path), save_weights_only=True)
    h5py.Group.__setitem__ = failing_write
    try:
        with pytest.raises(OSError, match="disk full"):
            drive_epochs(checkpoint, compiled_cnn(), [{"val_loss": 1.0}])
    finally:
        h5py.Group.__setitem__ = original
    assert path.read_text() == "previous"
    assert os.listdir(tmp_path) == ["best.weights.h5"]  # no temporary file left behind


def test_whole_model_saves_are_atomic_too(tmp_path):
    class SavingModel(FakeModel):
        def save(self, filepath, overwrite=True):
            assert str(filepath).endswith("-model.keras")  # the suffix model.save checks
            with open(filepath, "w") as file:
                file.write("half a fil")
            raise OSError("killed")

    path = tmp_path / "model.keras"
    path.write_text("previous")
    with pytest.raises(OSError, match="killed"):
        drive_epochs(ModelCheckpoint(str(path)), SavingModel(), [{"val_loss": 1.0}])
    assert path.read_text() == "previous"
    assert os.listdir(tmp_path) == ["model.keras"]


def test_keras_2_weights_h5_names_the_users_file(tmp_path):
    from model_helpers import compiled_cnn

    checkpoint = ModelCheckpoint(str(tmp_path / "w.h5"), save_weights_only=True)
    with pytest.raises(ValueError, match=r"w\.h5 names a Keras 2 legacy HDF5 weights file"):
        drive_epochs(checkpoint, compiled_cnn(), [{"val_loss": 1.0}])
    assert os.listdir(tmp_path) == []


def test_checkpoints_of_a_real_fit_hold_that_epochs_weights(tmp_path):
    from model_helpers import compiled_cnn, quadrant_data

    x, y = quadrant_data(24)
    model = compiled_cnn()
    per_epoch = []
    record = kk.callbacks.LambdaCallback(
        on_epoch_end=lambda epoch, logs: per_epoch.append(model.get_weights()))
    checkpoint = ModelCheckpoint(str(tmp_path / "e{epoch}.weights.h5"), monitor="loss",
                                 save_weights_only=True, verbose=1)
    model.fit(x, y, batch_size=8, epochs=3, verbose=0, shuffle=False,
              callbacks=[record, checkpoint])
    for epoch, expected in enumerate(per_epoch):
        fresh = compiled_cnn()
        fresh.load_weights(tmp_path / f"e{epoch + 1}.weights.h5")
        for loaded, value in zip(fresh.get_weights(), expected, strict=True):
            np.testing.assert_array_equal(loaded, value)
    # loading into the trained model, whose plans already exist, changes what they compute
    model.load_weights(tmp_path / "e1.weights.h5")
    np.testing.assert_array_equal(model.predict(x), fresh_predictions(tmp_path, x))


def fresh_predictions(folder, x):
    from model_helpers import compiled_cnn

    fresh = compiled_cnn()
    fresh.load_weights(folder / "e1.weights.h5")
    return fresh.predict(x)
