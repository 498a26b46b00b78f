"""`model.save` is atomic: a process killed while it writes a `.keras` zip or a Keras 2 `.h5`
file (in the middle of the data, or written and not yet renamed) leaves the previous model file
intact and loadable under its name; a save that fails on a model it cannot describe writes
nothing."""

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from kiln import keras as kk

ROOT = Path(kk.__file__).parents[2]

WRITER = textwrap.dedent('''
    import os, sys, time, zipfile
    import h5py
    import numpy as np
    from kiln import keras as kk

    path, where = sys.argv[1:3]
    model = kk.Sequential([kk.Input((6,)), kk.layers.Dense(5), kk.layers.Dense(3)])
    model.compile(optimizer="adam", loss="mse")
    model.set_weights([np.full(w.shape, 1.0, np.float32) for w in model.weights])
    model.save(path)  # the previous file: all ones
    model.set_weights([np.full(w.shape, 2.0, np.float32) for w in model.weights])

    def stall(*args, **kwargs):
        print("stalled", flush=True)
        time.sleep(60)

    if where == "mid-data" and path.endswith(".keras"):
        original = zipfile.ZipFile.writestr

        def slow_writestr(self, name, data, *args, **kwargs):
            if name == "model.weights.h5":
                original(self, name, data[:len(data) // 2], *args, **kwargs)
                stall()
            original(self, name, data, *args, **kwargs)
        zipfile.ZipFile.writestr = slow_writestr
    elif where == "mid-data":
        original = h5py.Group.__setitem__

        def slow_setitem(self, key, value):
            original(self, key, value)
            stall()
        h5py.Group.__setitem__ = slow_setitem
    else:  # written and flushed, not yet renamed
        original_replace = os.replace

        def slow_replace(source, target):
            stall()
            original_replace(source, target)
        os.replace = slow_replace
    model.save(path)
''')


@pytest.mark.parametrize("suffix", [".keras", ".h5"])
@pytest.mark.parametrize("where", ["mid-data", "before-rename"])
def test_killed_save_leaves_the_previous_file(where, suffix, tmp_path):
    script = tmp_path / "writer.py"
    script.write_text(WRITER)
    path = tmp_path / f"model{suffix}"
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
    model = kk.models.load_model(path)
    for value in model.get_weights():
        np.testing.assert_array_equal(value, 1.0)
    assert model.compiled


def test_subclassed_model_to_h5_is_refused_and_nothing_is_written(tmp_path):
    # (a .keras file holds it: tests/keras/saving/test_subclassed_model_files.py)
    class Net(kk.Model):
        def __init__(self):
            super().__init__()
            self.dense = kk.layers.Dense(2)

        def call(self, inputs):
            return self.dense(inputs)

    net = Net()
    net.build((None, 3))
    with pytest.raises(ValueError, match="subclassed model.*save it to a .keras file"):
        net.save(tmp_path / "net.h5")
    assert os.listdir(tmp_path) == []
    with pytest.raises(ValueError, match="must end in '.keras'"):
        net.save(tmp_path / "net.tf")
