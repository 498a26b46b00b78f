"""keras-io's timeseries_classification_transformer.py runs in kiln with only its imports changed
(read from a keras-io checkout named by KILN_KERAS_IO): four post-norm Transformer encoder
blocks (MultiHeadAttention with dropout, Dropout, LayerNormalization, residual adds, Conv1D
kernel_size 1) over the UCR FordA series, GlobalAveragePooling1D(data_format="channels_last"), a
Dense head, Adam and EarlyStopping, batch size 64 as in the script.

The data: the script reads `root_url + "FordA_TRAIN.tsv"` with np.loadtxt, which downloads it
through urllib's urlopen; the test serves small TSV files in the real format (label -1 / 1,
then the values of one series per line; 128 training and 32 test series, learnable sines in
noise) for exactly those two URLs. The series are 32 values long instead of FordA's 500: the
attention's cost grows with the square of the length (at 500 steps and batch 64 one training
step is about 800 GFLOP), and the script takes its input shape from the data.

Lines rewritten (each must occur exactly once): `epochs=200,` -> `epochs=2,`.

The same model built by the script's own functions with real Keras 3 has the same layer names
(Keras's MultiHeadAttention takes the automatic names "softmax" and "dropout" for its inner
layers, so the script's first Dropout is "dropout_1") and, with the weights kiln trained, the
same predictions.

What this script's model can learn here: with one feature per step, each LayerNormalization
outputs its beta whatever its input (x - mean is 0), in Keras as in kiln, so no gradient
reaches the attention or the convolutions; only the betas and the Dense head learn, and from
Keras's initial weights (zero betas and biases) the output starts at exactly (0.5, 0.5). On
these files, from the same initial weights (two epochs, two batches of 64, no shuffling),
kiln's epoch losses were 0.6931397 and 0.6931386 and Keras's 0.6931401 and 0.6931311 (dropout
draws differ); Keras's training step takes long to compile, so that run is not repeated here.
"""

import io
import sys
import types
import urllib.request
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

from kiln.keras import backend as kiln_backend  # noqa: E402

NAME = "timeseries_classification_transformer"
ROOT_URL = "https://raw.githubusercontent.com/hfawaz/cd-diagram/master/FordA/"
EPOCHS = 2
LENGTH = 32



@pytest.fixture
def ford_a(keras2_cache, tmp_path, monkeypatch):
    """FordA_TRAIN.tsv / FordA_TEST.tsv (32 values a series) served at the script's URLs."""
    folder = tmp_path / "ford_a"
    folder.mkdir()
    labels = {name: write_ucr_tsv(folder / name, count, length=LENGTH, seed=seed)
              for name, count, seed in (("FordA_TRAIN.tsv", 128, 1), ("FordA_TEST.tsv", 32, 2))}
    requested = []

    def urlopen(url, *args, **kwargs):
        requested.append(url)
        if not url.startswith(ROOT_URL) or url[len(ROOT_URL):] not in labels:
            raise urllib.error.URLError(f"{url}: network disabled in tests")
        return io.BytesIO((folder / url[len(ROOT_URL):]).read_bytes())

    monkeypatch.setattr(urllib.request, "urlopen", urlopen)
    work = tmp_path / "work"  # numpy's DataSource saves what it downloads in the working one
    work.mkdir()
    monkeypatch.chdir(work)
    return labels, requested


def keras_copy(namespace):
    """The script's build_model, run with real Keras 3 instead of kiln."""
    K = real_keras()
    K.backend.clear_session()
    names = dict(namespace, keras=K, layers=K.layers)
    names["transformer_encoder"] = types.FunctionType(
        namespace["transformer_encoder"].__code__, names)
    build = types.FunctionType(namespace["build_model"].__code__, names)
    return K, build(namespace["input_shape"], head_size=256, num_heads=4, ff_dim=4,
                    num_transformer_blocks=4, mlp_units=[128], mlp_dropout=0.4, dropout=0.25)


def test_timeseries_classification_transformer(ford_a, capsys):
    labels, requested = ford_a
    kiln_backend.clear_session()  # layer names start afresh, as in a new process (and Keras's)
    namespace = run_script(NAME, [("    epochs=200,", f"    epochs={EPOCHS},")], origin=KERAS_IO)
    out = capsys.readouterr().out

    # (numpy opens a URL twice: once to check it exists)
    assert list(dict.fromkeys(requested)) == [ROOT_URL + "FordA_TRAIN.tsv",
                                              ROOT_URL + "FordA_TEST.tsv"]
    model = namespace["model"]
    assert namespace["x_train"].shape == (128, LENGTH, 1) and namespace["n_classes"] == 2
    np.testing.assert_array_equal(namespace["y_test"], (labels["FordA_TEST.tsv"] == 1))
    assert "Total params: 29,258" in out.replace("29258", "29,258")

    # fit: two epochs of two steps (102 training series, batch 64), then evaluate
    logs = epoch_logs(out)
    assert len(logs) == EPOCHS + 1  # and evaluate's line
    assert all(out.count(f"Epoch {e}/{EPOCHS}") == 1 for e in range(1, EPOCHS + 1))
    assert {"val_loss", "val_sparse_categorical_accuracy"} <= set(logs[0])
    history = model.history.history  # (the script drops fit's return value)
    assert len(history["loss"]) == EPOCHS and np.all(np.isfinite(history["loss"]))
    test_loss = logs[-1]["loss"]
    assert np.isfinite(test_loss)

    # real Keras: the script's model has the same layer names and, given the weights kiln
    # trained, predicts what kiln predicts (inference: no dropout)
    K, theirs = keras_copy(namespace)
    assert [layer.name for layer in theirs.layers] == [layer.name for layer in model.layers]
    assert [type(layer).__name__ for layer in theirs.layers] == [
        type(layer).__name__ for layer in model.layers]
    theirs.set_weights(model.get_weights())
    x = namespace["x_test"].astype(np.float32)
    ours = model.predict(x, verbose=0)
    np.testing.assert_allclose(ours, theirs.predict(x, verbose=0), rtol=1e-4, atol=1e-6)
    # training moved the weights away from the start, where the output is exactly (0.5, 0.5)
    assert np.abs(ours - 0.5).max() > 1e-6
