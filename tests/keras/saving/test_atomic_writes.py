"""Atomic writes: a process killed while it writes a weights file (in the middle of the HDF5
data, or after writing and before the rename) leaves the previous file intact and loadable
under the final name."""

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from kiln import keras as kk
from kiln.keras.saving.atomic_file import atomic_path, write_text_atomically

ROOT = Path(kk.__file__).parents[2]

WRITER = textwrap.dedent('''
    import os, sys, time
    import h5py
    import numpy as np
    from kiln import keras as kk

    path, where = sys.argv[1:3]
    model = kk.Sequential([kk.Input((6,)), kk.layers.Dense(5), kk.layers.Dense(3)])
    model.set_weights([np.full(w.shape, 1.0, np.float32) for w in model.weights])
    model.save_weights(path)  # the previous checkpoint: all ones
    model.set_weights([np.full(w.shape, 2.0, np.float32) for w in model.weights])

    def stall():
        print("stalled", flush=True)
        time.sleep(60)

    if where == "mid-data":
        writes = []
        original = h5py.Group.__setitem__

        def slow_setitem(self, key, value):
            original(self, key, value)
            writes.append(key)
            if len(writes) == 2:
                stall()
        h5py.Group.__setitem__ = slow_setitem
    else:  # written and flushed, not yet renamed
        original_replace = os.replace

        def slow_replace(source, target):
            stall()
            original_replace(source, target)
        os.replace = slow_replace
    model.save_weights(path)
''')


@pytest.mark.parametrize("where", ["mid-data", "before-rename"])
def test_killed_writer_leaves_the_previous_file(where, tmp_path):
    script = tmp_path / "writer.py"
    script.write_text(WRITER)
    path = tmp_path / "model.weights.h5"
    process = subprocess.Popen([sys.executable, str(script), str(path), where],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               env=dict(os.environ, PYTHONPATH=str(ROOT)))
    try:
        line = process.stdout.readline()
        assert line == "stalled\n", process.stderr.read()
        os.kill(process.pid, signal.SIGKILL)
    finally:
        process.kill()
        process.wait()
    model = kk.Sequential([kk.Input((6,)), kk.layers.Dense(5), kk.layers.Dense(3)])
    model.load_weights(path)
    for value in model.get_weights():
        np.testing.assert_array_equal(value, 1.0)
    # the interrupted temporary file is hidden and never has the final name
    leftovers = [name for name in os.listdir(tmp_path) if name.startswith(".tmp-")]
    assert len(leftovers) == 1 and leftovers[0].endswith("-model.weights.h5")


def test_atomic_path_removes_the_temporary_file_on_error(tmp_path):
    target = tmp_path / "notes.txt"
    write_text_atomically(target, "first")
    with pytest.raises(RuntimeError):
        with atomic_path(target) as temporary:
            Path(temporary).write_text("second, half writ")
            raise RuntimeError("interrupted")
    assert target.read_text() == "first"
    assert os.listdir(tmp_path) == ["notes.txt"]
