"""SyncBatchNormalization / BatchNormalization(synchronized=True) in one process: Keras 3's
config, and the same training as BatchNormalization (statistics over the only shard there is).
Across ranks it is tested in tests/keras/distribution/test_data_parallel.py."""

import numpy as np
import pytest

from kiln import keras
from kiln.keras.layers import BatchNormalization
from kiln.keras.layers.sync_batch_normalization import SyncBatchNormalization


def test_config_says_synchronized_and_round_trips():
    layer = SyncBatchNormalization(momentum=0.9)
    config = layer.get_config()
    assert config["synchronized"] is True and config["momentum"] == 0.9
    assert BatchNormalization.from_config(config).synchronized
    assert BatchNormalization().get_config()["synchronized"] is False
    with pytest.raises(ValueError, match="SyncBatchNormalization: argument synchronized"):
        SyncBatchNormalization(synchronized=False)


def _trained(layer):
    keras.utils.set_random_seed(2)
    model = keras.Sequential([keras.layers.Conv2D(3, 3, input_shape=(6, 6, 2)), layer,
                              keras.layers.Flatten(), keras.layers.Dense(2)])
    model.compile(optimizer="sgd", loss="mse")
    x = np.random.default_rng(0).random((12, 6, 6, 2), dtype=np.float32)
    model.fit(x, x[:, 0, 0, :], batch_size=4, epochs=1, verbose=0, shuffle=False)
    return model.get_weights()


def test_one_process_trains_as_batch_normalization():
    for synced, plain in zip(_trained(SyncBatchNormalization()), _trained(BatchNormalization()),
                             strict=True):
        assert np.array_equal(synced, plain)
