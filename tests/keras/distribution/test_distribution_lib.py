"""keras.distribution in one process: DataParallel's arguments, the one-process world a script
gets without mpiexec (with or without mpi4py), and how a global batch is split."""

import numpy as np
import pytest

from kiln import keras
from kiln.distributed import collective
from kiln.keras.distribution import data_parallel_loop, distribution_lib


@pytest.fixture
def one_process(monkeypatch):
    """As a script started with plain `python` on a machine without the extra."""
    monkeypatch.setattr(collective, "mpi_available", lambda: False)
    monkeypatch.setattr(collective, "launched_by_mpi", lambda: False)
    yield
    keras.distribution.set_distribution(None)


def test_data_parallel_refuses_keras_device_arguments(one_process):
    with pytest.raises(ValueError, match="DataParallel: arguments device_mesh and devices"):
        keras.distribution.DataParallel(devices=["cpu:0", "cpu:1"])
    with pytest.raises(ValueError, match="argument auto_shard_dataset must be True"):
        keras.distribution.DataParallel(auto_shard_dataset=False)
    with pytest.raises(ValueError, match="set_distribution: argument value must be"):
        keras.distribution.set_distribution("data_parallel")


def test_without_mpiexec_the_script_runs_as_one_process(one_process):
    keras.distribution.set_distribution(keras.distribution.DataParallel())
    assert keras.distribution.distribution().num_model_replicas == 1
    assert keras.distribution.list_devices() == ["cpu:0"]
    assert data_parallel_loop.active_world() is None and data_parallel_loop.is_writer()
    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.layers.Dense(3, input_shape=(4,))])
    model.compile(optimizer="sgd", loss="mse")
    x = np.random.default_rng(0).random((8, 4), dtype=np.float32)
    history = model.fit(x, x[:, :3], batch_size=4, epochs=2, verbose=0)
    assert len(history.history["loss"]) == 2
    assert model.predict(x).shape == (8, 3)


def test_under_mpiexec_without_mpi4py_says_what_to_install(monkeypatch, one_process):
    monkeypatch.setattr(collective, "launched_by_mpi", lambda: True)
    with pytest.raises(ImportError, match=r"pip install 'kiln\[distributed\]'"):
        distribution_lib.DataParallel()


@pytest.mark.parametrize("total, size, expected", [(16, 2, [8, 8]), (5, 2, [3, 2]),
                                                   (10, 4, [3, 3, 2, 2])])
def test_a_global_batch_splits_as_evenly_as_array_split(total, size, expected):
    assert data_parallel_loop.shard_counts(total, size) == expected
    assert expected == [len(part) for part in np.array_split(np.arange(total), size)]
