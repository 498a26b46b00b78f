"""Saved files look like the ones Keras's plain `open(path, "w")` leaves, through every writer
(model.save to .keras and .h5, save_weights, ModelCheckpoint, BackupAndRestore): a new file
gets 0666 less the umask, a replaced file keeps its mode, a symbolic link is written through
(its target is replaced, the link stays) and a read-only file is not replaced
(kiln.keras.saving.atomic_file)."""

import os
import stat

import numpy as np
import pytest

from kiln import keras as kk
from kiln.keras.saving.atomic_file import atomic_path

pytestmark = pytest.mark.usefixtures("kiln_keras_env")


def small_model():
    model = kk.Sequential([kk.Input((4,)), kk.layers.Dense(3), kk.layers.Dense(2)])
    model.compile(optimizer="sgd", loss="mse")
    return model


def fit_with(model, callback, epochs=1):
    x = np.arange(24, dtype=np.float32).reshape(6, 4) / 24
    model.fit(x, np.zeros((6, 2), np.float32), batch_size=6, epochs=epochs, verbose=0,
              callbacks=[callback])


def save_model(path):
    small_model().save(path)


def save_weights(path):
    small_model().save_weights(path)


def checkpoint_model(path):
    fit_with(small_model(), kk.callbacks.ModelCheckpoint(str(path)))


def checkpoint_weights(path):
    fit_with(small_model(), kk.callbacks.ModelCheckpoint(str(path), save_weights_only=True))


WRITERS = {"save .keras": (save_model, "m.keras"), "save .h5": (save_model, "m.h5"),
           "save_weights": (save_weights, "w.weights.h5"),
           "ModelCheckpoint": (checkpoint_model, "ckpt.keras"),
           "ModelCheckpoint weights": (checkpoint_weights, "ckpt.weights.h5")}


@pytest.fixture
def umask():
    """Sets the process's umask for the test (returns a setter), and restores it."""
    previous = os.umask(0o022)
    yield os.umask
    os.umask(previous)


def mode(path):
    return stat.S_IMODE(os.stat(path).st_mode)


def leftovers(folder):
    return [name for name in os.listdir(folder) if name.startswith(".tmp-")]


@pytest.mark.parametrize("writer", list(WRITERS))
@pytest.mark.parametrize("mask", [0o022, 0o027, 0o002], ids=["022", "027", "002"])
def test_a_new_file_gets_the_umasks_mode(tmp_path, umask, writer, mask):
    write, name = WRITERS[writer]
    umask(mask)
    write(tmp_path / name)
    assert mode(tmp_path / name) == 0o666 & ~mask
    assert leftovers(tmp_path) == []


@pytest.mark.parametrize("writer", list(WRITERS))
def test_a_replaced_file_keeps_its_mode(tmp_path, umask, writer):
    write, name = WRITERS[writer]
    (tmp_path / name).write_bytes(b"previous")
    os.chmod(tmp_path / name, 0o640)
    write(tmp_path / name)
    assert mode(tmp_path / name) == 0o640
    assert (tmp_path / name).read_bytes() != b"previous"


@pytest.mark.parametrize("writer", list(WRITERS))
@pytest.mark.parametrize("existing_target", [True, False])
def test_a_symbolic_link_is_written_through(tmp_path, umask, writer, existing_target):
    write, name = WRITERS[writer]
    (tmp_path / "real").mkdir()
    (tmp_path / "links").mkdir()
    target = tmp_path / "real" / name
    if existing_target:
        target.write_bytes(b"previous")
        os.chmod(target, 0o600)
    link = tmp_path / "links" / name
    link.symlink_to(target)
    write(link)
    assert link.is_symlink() and os.readlink(link) == str(target)
    assert target.read_bytes() != b"previous"
    assert mode(target) == (0o600 if existing_target else 0o644)
    assert leftovers(tmp_path / "real") == [] and leftovers(tmp_path / "links") == []
    if name.endswith(".weights.h5"):
        small_model().load_weights(link)
    else:
        kk.models.load_model(link)


def test_backup_and_restore_files_get_the_umasks_mode(tmp_path, umask):
    umask(0o027)
    backup = tmp_path / "backup"
    model = small_model()
    # two epochs: the second backup keeps the first as .bkp copies
    fit_with(model, kk.callbacks.BackupAndRestore(str(backup), delete_checkpoint=False,
                                                  double_checkpoint=True), epochs=2)
    names = sorted(os.listdir(backup))
    assert names == ["latest.weights.h5", "latest.weights.h5.bkp", "training_metadata.json",
                     "training_metadata.json.bkp"]
    assert [mode(backup / name) for name in names] == [0o640] * 4


def test_a_read_only_file_is_not_replaced(tmp_path, monkeypatch):
    path = tmp_path / "w.weights.h5"
    path.write_bytes(b"keep me")
    os.chmod(path, 0o444)
    # the tests may run as root, for whom every file is writable: ask as another user would
    real_access = os.access
    monkeypatch.setattr(os, "access", lambda p, how, **kw: False if str(p) == str(path)
                        else real_access(p, how, **kw))
    with pytest.raises(PermissionError, match=r"save_weights: cannot write .*w.weights.h5: "
                                              "the file is read-only"):
        small_model().save_weights(path)
    assert path.read_bytes() == b"keep me" and leftovers(tmp_path) == []


def test_the_temporary_file_is_private_while_it_is_written(tmp_path, umask):
    with atomic_path(tmp_path / "notes.txt") as temporary:
        assert mode(temporary) == 0o600
        with open(temporary, "w") as file:
            file.write("text")
    assert mode(tmp_path / "notes.txt") == 0o644
