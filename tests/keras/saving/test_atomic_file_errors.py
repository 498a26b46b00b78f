"""A save that fails for lack of space (or any I/O error) is an OSError with the errno, naming
the file the user asked for (not the temporary one) and the call; the temporary file is gone
and the previous file is intact, through every writer (kiln.keras.saving.atomic_file).

A full disk is simulated: h5py reports a failed write when it closes the file, as a
RuntimeError whose message carries the errno (what it raises on a full file system), zipfile
and fsync as OSError(ENOSPC)."""

import errno
import os

import h5py
import numpy as np
import pytest

from kiln import keras as kk
from kiln.keras.saving.legacy_weights import save_legacy_weights

pytestmark = pytest.mark.usefixtures("kiln_keras_env")


def small_model():
    model = kk.Sequential([kk.Input((4,)), kk.layers.Dense(3), kk.layers.Dense(2)])
    model.compile(optimizer="sgd", loss="mse")
    return model


def fit_with(callback):
    x = np.arange(24, dtype=np.float32).reshape(6, 4) / 24
    small_model().fit(x, np.zeros((6, 2), np.float32), batch_size=6, epochs=1, verbose=0,
                      callbacks=[callback])


WRITERS = {
    "save .keras": ("m.keras", "save", lambda path: small_model().save(path)),
    "save .h5": ("m.h5", "save", lambda path: small_model().save(path)),
    "save_weights": ("w.weights.h5", "save_weights",
                     lambda path: small_model().save_weights(path)),
    "Keras 2 weights": ("w.h5", "save_weights", lambda path: save_legacy_weights(
        small_model(), path)),
    "ModelCheckpoint": ("ckpt.keras", "ModelCheckpoint",
                        lambda path: fit_with(kk.callbacks.ModelCheckpoint(str(path)))),
    "ModelCheckpoint weights": ("ckpt.weights.h5", "save_weights", lambda path: fit_with(
        kk.callbacks.ModelCheckpoint(str(path), save_weights_only=True))),
    "BackupAndRestore": ("latest.weights.h5", "save_weights", lambda path: fit_with(
        kk.callbacks.BackupAndRestore(str(path.parent), delete_checkpoint=False))),
}


def h5py_full_disk(monkeypatch, folder):
    """h5py.File.close fails as on a full file system, for files written in `folder`."""
    close = h5py.File.close

    def failing_close(self):
        name = self.filename
        close(self)
        if isinstance(name, str) and name.startswith(str(folder)):
            raise RuntimeError(
                "Can't decrement id ref count (file write failed: time = Thu Dec  3 16:13:15 "
                f"2026\n, filename = '{name}', file descriptor = 3, errno = 28, error message "
                "= 'No space left on device', buf = 0x55ad75ab1110, total write size = 2048, "
                "bytes this sub-write = 2048, offset = 4096)")
    monkeypatch.setattr(h5py.File, "close", failing_close)


def fsync_full_disk(monkeypatch, folder):
    """os.fsync fails with ENOSPC (a file system that allocates late reports it there)."""
    def failing_fsync(descriptor):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
    monkeypatch.setattr(os, "fsync", failing_fsync)


def zip_full_disk(monkeypatch, folder):
    import zipfile

    def failing_writestr(self, name, data, *args, **kwargs):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
    monkeypatch.setattr(zipfile.ZipFile, "writestr", failing_writestr)


FAILURES = {"h5py": h5py_full_disk, "fsync": fsync_full_disk, "zip": zip_full_disk}
CASES = [(writer, failure) for writer in WRITERS for failure in FAILURES
         if (failure == "zip") == (writer in ("save .keras", "ModelCheckpoint"))
         or failure == "fsync"]


@pytest.mark.parametrize("writer, failure", CASES)
def test_a_full_disk_is_an_oserror_naming_the_file_and_nothing_is_left(
        tmp_path, monkeypatch, writer, failure):
    name, caller, write = WRITERS[writer]
    folder = tmp_path / "out"
    folder.mkdir()
    path = folder / name
    previous = writer != "BackupAndRestore"  # (which would try to restore from it)
    if previous:
        path.write_bytes(b"previous")
    FAILURES[failure](monkeypatch, folder)
    with pytest.raises(OSError) as raised:
        write(path)
    assert raised.value.errno == errno.ENOSPC
    assert str(raised.value) == (f"[Errno 28] {caller}: cannot write {path}: No space left on "
                                 "device")
    assert sorted(os.listdir(folder)) == ([name] if previous else [])
    assert not previous or path.read_bytes() == b"previous"


def test_other_runtime_errors_are_not_disguised(tmp_path, monkeypatch):
    def broken(self, key, value):
        raise RuntimeError("a bug, not a full disk")
    monkeypatch.setattr(h5py.Group, "__setitem__", broken)
    with pytest.raises(RuntimeError, match="a bug"):
        small_model().save_weights(tmp_path / "w.weights.h5")
    assert os.listdir(tmp_path) == []


def test_a_missing_folder_names_the_file(tmp_path):
    path = tmp_path / "missing" / "w.weights.h5"
    with pytest.raises(FileNotFoundError, match=rf"save_weights: cannot write {path}: No such"):
        small_model().save_weights(path)
