"""ModelCheckpoint saving whole models (save_weights_only=False) through model.save: each
epoch's .keras / .h5 file loads as a compiled model that continues training from that epoch."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

import models_for_saving  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from kiln import keras as kk  # noqa: E402

pytestmark = pytest.mark.usefixtures("kiln_keras_env")


@pytest.mark.parametrize("suffix", [".keras", ".h5"])
def test_checkpoint_files_resume(tmp_path, suffix):
    x, y = models_for_saving.data()
    model = models_for_saving.resnet_block(kk)
    model.compile(optimizer=kk.optimizers.Adam(0.01), loss="categorical_crossentropy")
    pattern = str(tmp_path / ("epoch{epoch}" + suffix))
    model.fit(x, y, batch_size=8, epochs=2, shuffle=False, verbose=0,
              callbacks=[kk.callbacks.ModelCheckpoint(pattern)])
    assert sorted(p.name for p in tmp_path.iterdir()) == [f"epoch1{suffix}", f"epoch2{suffix}"]
    loaded = kk.models.load_model(tmp_path / f"epoch2{suffix}")
    assert int(loaded.optimizer.iterations) == 4
    for a, b in zip(loaded.get_weights(), model.get_weights(), strict=True):
        np.testing.assert_array_equal(a, b)
    model.fit(x, y, batch_size=8, epochs=1, shuffle=False, verbose=0)
    loaded.fit(x, y, batch_size=8, epochs=1, shuffle=False, verbose=0)
    for a, b in zip(loaded.get_weights(), model.get_weights(), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)
