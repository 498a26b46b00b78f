"""A Keras 3 model saved with `zipped=False` (a folder holding the .keras zip's entries as
files) loads in kiln with the zip's checks; other folders, links out of the folder and missing
entries are refused naming the folder; `save_weights(max_shard_size=...)` is refused by name."""

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parents[1]))  # the shared real-Keras helper
sys.path.insert(0, str(Path(__file__).parent))

import keras_oracle  # noqa: E402
import models_for_saving  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from kiln import keras as kk  # noqa: E402

pytestmark = pytest.mark.usefixtures("kiln_keras_env")


@pytest.fixture
def keras_folder(tmp_path):
    """A Sequential CNN Keras trained one epoch and saved unzipped; its predictions."""
    keras = keras_oracle.real_keras()
    x, y = models_for_saving.data()
    theirs = models_for_saving.sequential_cnn(keras)
    theirs.compile(optimizer="adam", loss="categorical_crossentropy")
    theirs.fit(x, y, batch_size=8, epochs=1, verbose=0)
    folder = tmp_path / "theirs_folder"
    theirs.save(folder, zipped=False)
    return folder, x, np.asarray(theirs.predict(x, verbose=0))


def test_kiln_loads_a_folder_keras_saved_with_zipped_false(keras_folder):
    folder, x, expected = keras_folder
    assert (folder / "config.json").is_file()
    ours = kk.models.load_model(folder)
    assert ours.compiled and int(ours.optimizer.iterations) == 2
    np.testing.assert_allclose(ours.predict(x, verbose=0), expected,
                               rtol=keras_oracle.RTOL, atol=keras_oracle.ATOL)


def test_a_folder_that_is_not_a_keras_model_is_refused_naming_it(tmp_path):
    (tmp_path / "saved_model.pb").write_bytes(b"\x08\x01")
    with pytest.raises(ValueError, match=r"is a folder without a 'config.json', so not a "
                                         r"Keras 3 model saved with zipped=False"):
        kk.models.load_model(tmp_path)


def test_a_linked_or_missing_entry_is_refused(keras_folder, tmp_path):
    folder, _, _ = keras_folder
    outside = tmp_path / "elsewhere.h5"
    os.replace(folder / "model.weights.h5", outside)
    with pytest.raises(ValueError, match=r"theirs_folder has no 'model.weights.h5'"):
        kk.models.load_model(folder)
    os.symlink(outside, folder / "model.weights.h5")
    with pytest.raises(ValueError, match=r"'model.weights.h5' is not a regular file"):
        kk.models.load_model(folder)


def test_save_weights_refuses_max_shard_size_by_name(tmp_path):
    model = models_for_saving.sequential_cnn(kk)
    with pytest.raises(ValueError, match="argument max_shard_size is not supported"):
        model.save_weights(tmp_path / "w.weights.h5", max_shard_size=1)
    assert not (tmp_path / "w.weights.h5").exists()
