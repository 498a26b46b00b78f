"""keras-io's timeseries_classification_from_scratch.py (the Keras 3 version) runs in kiln with
only its import changed (read from a keras-io checkout named by KILN_KERAS_IO): a fully
convolutional network (Conv1D, BatchNormalization, ReLU, GlobalAveragePooling1D) on the UCR
FordA TSV files, trained with ModelCheckpoint("best_model.keras", save_best_only=True),
ReduceLROnPlateau and EarlyStopping, then reloaded with keras.models.load_model and evaluated.

The data: the script reads `root_url + "FordA_TRAIN.tsv"` with np.loadtxt, which downloads it
through urllib's urlopen; the test serves small TSV files in the real format (label -1 / 1,
then 500 values per line; 128 training and 32 test series, learnable sines in noise) for exactly
those two URLs. keras.utils.plot_model needs pydot and Graphviz (optional): it is replaced by a
recorder, and without pydot the real one must refuse with an ImportError naming it.

Lines rewritten (each must occur exactly once): `epochs = 500` -> `epochs = 3`. The script
writes best_model.keras into the working directory: a temporary one.
"""

import importlib.util
import io
import math
import sys
import urllib.request
import zipfile
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).parents[1] / "keras"))  # the shared real-Keras helper
from keras2_scripts import (  # noqa: E402
    KERAS_IO,
    epoch_logs,
    run_script,
    write_ucr_tsv,
)
from keras_oracle import real_keras  # noqa: E402

from kiln import keras  # noqa: E402

NAME = "timeseries_classification_from_scratch"
ROOT_URL = "https://raw.githubusercontent.com/hfawaz/cd-diagram/master/FordA/"
EPOCHS = 3



def test_plot_model_without_pydot_says_what_to_install(tmp_path):
    if importlib.util.find_spec("pydot") is not None:
        pytest.skip("pydot is installed")
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2)])
    with pytest.raises(ImportError, match="pydot"):
        keras.utils.plot_model(model, to_file=str(tmp_path / "model.png"), show_shapes=True)


@pytest.fixture
def ford_a(keras2_cache, tmp_path, monkeypatch):
    """FordA_TRAIN.tsv / FordA_TEST.tsv served at the script's URLs; the URLs read."""
    folder = tmp_path / "ford_a"
    folder.mkdir()
    labels = {name: write_ucr_tsv(folder / name, count, seed=seed)
              for name, count, seed in (("FordA_TRAIN.tsv", 128, 1), ("FordA_TEST.tsv", 32, 2))}
    requested = []

    def urlopen(url, *args, **kwargs):
        requested.append(url)
        if not url.startswith(ROOT_URL) or url[len(ROOT_URL):] not in labels:
            raise urllib.error.URLError(f"{url}: network disabled in tests")
        return io.BytesIO((folder / url[len(ROOT_URL):]).read_bytes())

    monkeypatch.setattr(urllib.request, "urlopen", urlopen)
    monkeypatch.setenv("MPLBACKEND", "Agg")
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    return labels, requested, work


def test_timeseries_classification_from_scratch(ford_a, monkeypatch, capsys):
    labels, requested, work = ford_a
    plots = []
    monkeypatch.setattr(keras.utils, "plot_model",
                        lambda model, **kwargs: plots.append((model, kwargs)))
    namespace = run_script(NAME, [("epochs = 500", f"epochs = {EPOCHS}")], origin=KERAS_IO)
    out = capsys.readouterr().out

    # (numpy opens a URL twice: once to check it exists)
    assert list(dict.fromkeys(requested)) == [ROOT_URL + "FordA_TRAIN.tsv",
                                              ROOT_URL + "FordA_TEST.tsv"]
    assert namespace["x_train"].shape == (128, 500, 1) and namespace["num_classes"] == 2
    np.testing.assert_array_equal(namespace["y_test"], (labels["FordA_TEST.tsv"] == 1))
    (plotted, plot_kwargs), = plots
    assert plot_kwargs == {"show_shapes": True}
    assert [type(layer).__name__ for layer in plotted.layers] == [
        "InputLayer", *["Conv1D", "BatchNormalization", "ReLU"] * 3,
        "GlobalAveragePooling1D", "Dense"]

    # fit: three epochs (EarlyStopping's patience is 50), ReduceLROnPlateau logs the rate
    history = namespace["history"].history
    assert list(history) == ["loss", "sparse_categorical_accuracy", "val_loss",
                             "val_sparse_categorical_accuracy", "learning_rate"]
    assert len(history["loss"]) == EPOCHS
    assert history["learning_rate"] == pytest.approx([0.001] * EPOCHS)
    assert history["loss"][-1] < history["loss"][0]
    logs = epoch_logs(out)
    assert len(logs) == EPOCHS + 1 and logs[0]["learning_rate"] == pytest.approx(0.001)

    # ModelCheckpoint wrote a Keras zip; load_model read back the best epoch's model
    with zipfile.ZipFile(work / "best_model.keras") as archive:
        assert {"config.json", "metadata.json", "model.weights.h5"} <= set(archive.namelist())
    best = namespace["model"]
    assert best is not plotted
    x_val, y_val = namespace["x_train"][102:], namespace["y_train"][102:]  # validation_split
    val_loss, _ = best.evaluate(x_val, y_val, verbose=0)
    assert val_loss == pytest.approx(min(history["val_loss"]), rel=1e-4)
    test_loss, test_accuracy = best.evaluate(namespace["x_test"], namespace["y_test"], verbose=0)
    assert f"Test accuracy {test_accuracy}" in out and f"Test loss {test_loss}" in out
    assert math.isfinite(test_loss)

    # the file kiln wrote is a Keras 3 file: Keras loads it and predicts the same
    theirs = real_keras().models.load_model(work / "best_model.keras")
    x = namespace["x_test"][:8].astype(np.float32)
    np.testing.assert_allclose(best.predict(x, verbose=0), theirs.predict(x, verbose=0),
                               rtol=1e-4, atol=1e-5)
