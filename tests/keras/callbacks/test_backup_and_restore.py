"""BackupAndRestore: a training process killed in the middle of epoch 3 is resumed by a second
process, which must end with the weights of an uninterrupted run. Runs are made deterministic
with fixed initial weights and `shuffle=False`.

The weights are compared exactly. A step is bit-reproducible on one machine with one thread
count however busy the cores are (docs/data-pipelines.md, "Reproducibility"): the three
processes agreed bit for bit alone and while two busy loops loaded both cores. A wrong resume
(a lost optimizer state, an epoch trained twice or skipped) changes weights by 1e-2 and more;
a difference in the last bits would be a reproducibility bug, not noise to tolerate.
"""

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import h5py
import numpy as np
import pytest

from kiln import keras as kk
from kiln.keras.callbacks import BackupAndRestore

TESTS_KERAS = Path(__file__).parents[1]
ROOT = Path(kk.__file__).parents[2]

TRAINING_SCRIPT = textwrap.dedent('''
    import json, os, sys
    import numpy as np
    sys.path.insert(0, {tests!r})
    from kiln import keras as kk
    from model_helpers import quadrant_data, small_cnn

    mode, backup_dir, out, optimizer = sys.argv[1:5]
    OPTIMIZERS = {{
        "sgd": lambda: kk.optimizers.SGD(learning_rate=0.1),
        "sgd_momentum": lambda: kk.optimizers.SGD(learning_rate=0.1, momentum=0.9),
        "adam": lambda: kk.optimizers.Adam(learning_rate=0.01),
    }}
    x, y = quadrant_data(32)
    model = small_cnn()
    rng = np.random.default_rng(0)
    model.set_weights([rng.normal(0, 0.3, w.shape).astype(np.float32) for w in model.weights])
    model.compile(optimizer=OPTIMIZERS[optimizer](), loss="categorical_crossentropy")
    epochs = []

    class Record(kk.callbacks.Callback):
        def on_epoch_begin(self, epoch, logs=None):
            epochs.append(epoch)
            self.epoch = epoch

        def on_epoch_end(self, epoch, logs=None):
            np.savez(f"{{out}}-epoch{{epoch}}.npz", *model.get_weights())

        def on_train_batch_begin(self, batch, logs=None):
            if mode == "killed" and self.epoch == 2 and batch == 2:
                os._exit(17)  # killed in the middle of the third epoch

    callbacks = [Record()]
    if mode != "reference":
        callbacks.insert(0, kk.callbacks.BackupAndRestore(backup_dir))
    model.fit(x, y, batch_size=8, epochs=5, shuffle=False, verbose=0, callbacks=callbacks)
    np.savez(out + ".npz", *model.get_weights())
    with open(out + ".json", "w") as file:
        json.dump(epochs, file)
''')


def run(script, mode, backup_dir, out, optimizer):
    environment = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, str(script), mode, str(backup_dir), str(out),
                           optimizer], env=environment, capture_output=True, text=True,
                          timeout=300)


def load(path):
    with np.load(path) as arrays:
        return [arrays[f"arr_{i}"] for i in range(len(arrays.files))]


# plain SGD has no state to restore: momentum and Adam's slots are the cases that can go wrong
@pytest.mark.parametrize("optimizer", ["sgd_momentum", "adam"])
def test_killed_run_resumes_with_the_weights_of_an_uninterrupted_run(optimizer, tmp_path):
    script = tmp_path / "train.py"
    script.write_text(TRAINING_SCRIPT.format(tests=str(TESTS_KERAS)))
    backup = tmp_path / "backup"
    reference = run(script, "reference", backup, tmp_path / "reference", optimizer)
    assert reference.returncode == 0, reference.stderr
    killed = run(script, "killed", backup, tmp_path / "killed", optimizer)
    assert killed.returncode == 17, killed.stderr

    # what the killed run left: the weights and optimizer state of its second epoch, epoch 2
    with h5py.File(backup / "latest.weights.h5", "r") as h5_file:
        assert json.loads(h5_file.attrs["training_metadata"])["epoch"] == 2
    assert json.loads((backup / "training_metadata.json").read_text()) == {"epoch": 2,
                                                                          "batch": 0}
    expected = load(tmp_path / "reference-epoch1.npz")
    for value, saved in zip(load(tmp_path / "killed-epoch1.npz"), expected, strict=True):
        np.testing.assert_array_equal(value, saved)

    resumed = run(script, "resume", backup, tmp_path / "resumed", optimizer)
    assert resumed.returncode == 0, resumed.stderr
    assert json.loads((tmp_path / "resumed.json").read_text()) == [2, 3, 4]
    for value, final in zip(load(tmp_path / "resumed.npz"), load(tmp_path / "reference.npz"),
                            strict=True):
        np.testing.assert_array_equal(value, final)
    assert not backup.exists()  # deleted once training ended normally


def test_restore_loads_weights_and_sets_the_initial_epoch(tmp_path):
    from model_helpers import compiled_cnn

    source = compiled_cnn()
    backup = BackupAndRestore(tmp_path / "b", delete_checkpoint=False)
    backup.set_model(source)
    backup.on_train_begin()
    for epoch in range(3):
        backup.on_epoch_begin(epoch)
        backup.on_epoch_end(epoch, {"loss": 1.0})
    backup.on_train_end()
    assert sorted(os.listdir(tmp_path / "b")) == ["latest.weights.h5",
                                                   "training_metadata.json"]

    target = compiled_cnn()
    restore = BackupAndRestore(tmp_path / "b")
    restore.set_model(target)
    restore.on_train_begin()
    assert target._initial_epoch == 3
    for value, expected in zip(target.get_weights(), source.get_weights(), strict=True):
        np.testing.assert_array_equal(value, expected)
    restore.on_train_end()
    assert target._initial_epoch is None  # the next fit starts at its own initial_epoch
    assert not (tmp_path / "b").exists()


def test_double_checkpoint_falls_back_on_the_previous_backup(tmp_path):
    from model_helpers import compiled_cnn

    source = compiled_cnn()
    backup = BackupAndRestore(tmp_path / "b", double_checkpoint=True)
    backup.set_model(source)
    backup.on_train_begin()
    backup.on_epoch_end(0, {})
    first = source.get_weights()
    source.set_weights([w + 1 for w in first])
    backup.on_epoch_end(1, {})
    (tmp_path / "b" / "latest.weights.h5").write_bytes(b"damaged")
    target = compiled_cnn()
    restore = BackupAndRestore(tmp_path / "b")
    restore.set_model(target)
    restore.on_train_begin()
    assert target._initial_epoch == 1
    for value, expected in zip(target.get_weights(), first, strict=True):
        np.testing.assert_array_equal(value, expected)


def test_arguments_are_checked_as_keras():
    with pytest.raises(ValueError, match="Empty `backup_dir`"):
        BackupAndRestore("")
    with pytest.raises(ValueError, match="Invalid value for argument `save_freq`"):
        BackupAndRestore("b", save_freq="batch")


def backup_metadata_sequence(module, model, folder):
    """Drives BackupAndRestore(save_freq=2) over epochs of 3, 2 and 4 batches; returns the
    training_metadata.json contents after every hook call that may save."""
    backup = module.callbacks.BackupAndRestore(str(folder), save_freq=2,
                                               delete_checkpoint=False)
    backup.set_model(model)
    backup.on_train_begin({})
    seen = []

    def metadata():
        path = folder / "training_metadata.json"
        return json.loads(path.read_text()) if path.exists() else None

    for epoch, batches in enumerate((3, 2, 4)):
        backup.on_epoch_begin(epoch, {})
        for batch in range(batches):
            backup.on_train_batch_end(batch, {"loss": 1.0})
            seen.append(metadata())
        backup.on_epoch_end(epoch, {"loss": 1.0})
        seen.append(metadata())
    return seen


def test_batch_frequency_backups_as_keras(tmp_path):
    """Keras 3 backs up every N batches (counting across epochs) and resumes at the start of
    the first epoch not completed, with the weights of the last backup."""
    from callback_drivers import FakeModel, keras_oracle
    from model_helpers import compiled_cnn

    keras = keras_oracle.real_keras()
    mine = backup_metadata_sequence(kk, compiled_cnn(), tmp_path / "kiln")
    theirs = backup_metadata_sequence(keras, FakeModel(), tmp_path / "keras")
    assert mine == theirs
    assert len({json.dumps(m) for m in mine}) > 3  # several distinct backups were made

    model = compiled_cnn()
    backup = BackupAndRestore(tmp_path / "b", save_freq=2)
    backup.set_model(model)
    backup.on_train_begin()
    backup.on_epoch_begin(0)
    backup.on_train_batch_end(0, {})
    backup.on_train_batch_end(1, {})  # saved here
    saved = model.get_weights()
    model.set_weights([w + 1 for w in saved])
    backup.on_train_batch_end(2, {})  # then killed
    target = compiled_cnn()
    restore = BackupAndRestore(tmp_path / "b")
    restore.set_model(target)
    restore.on_train_begin()
    assert not target._initial_epoch  # epoch 0 was not completed: it starts over
    for value, expected in zip(target.get_weights(), saved, strict=True):
        np.testing.assert_array_equal(value, expected)


def test_training_end_removes_only_the_backup_files(tmp_path):
    from model_helpers import compiled_cnn

    folder = tmp_path / "shared"
    folder.mkdir()
    (folder / "notes.txt").write_text("mine")
    backup = BackupAndRestore(folder, double_checkpoint=True)
    backup.set_model(compiled_cnn())
    backup.on_train_begin()
    backup.on_epoch_end(0, {})
    backup.on_epoch_end(1, {})
    assert sorted(os.listdir(folder)) == ["latest.weights.h5", "latest.weights.h5.bkp",
                                          "notes.txt", "training_metadata.json",
                                          "training_metadata.json.bkp"]
    backup.on_train_end()
    assert os.listdir(folder) == ["notes.txt"]
    kept = BackupAndRestore(tmp_path / "kept", delete_checkpoint=False)
    kept.set_model(compiled_cnn())
    kept.on_train_begin()
    kept.on_epoch_end(0, {})
    kept.on_train_end()
    assert sorted(os.listdir(tmp_path / "kept")) == ["latest.weights.h5",
                                                     "training_metadata.json"]
