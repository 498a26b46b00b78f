"""Runs examples/cifar10_cnn.py, the seed's Keras 2 cifar10_cnn.py with only its imports
changed (RMSprop through Keras 2's `rmsprop(lr=..., decay=...)`, real-time augmentation with
ImageDataGenerator and `fit_generator(..., workers=4)`, `model.save(...h5)`), for 2 epochs
instead of 100 (a textual substitution), with `cifar10.load_data` returning real CIFAR-10
images: the first 460 of the 846 test images shipped in $KILN_DATASETS/cifar10-sample as
training data and the last 146 as test data (skipped without them).

What a few steps can show: the script prints what Keras 2's did, the loss is finite and the
second epoch's is lower than the first's, the saved Keras 2 .h5 file loads back (with
kiln.keras.models.load_model) into a model that predicts the same, compiled as saved."""

import math
import re
from pathlib import Path

import numpy as np
import pytest

from kiln.keras import backend
from kiln.keras import utils as keras_utils
from kiln.keras.datasets import cifar10
from kiln.keras.models import load_model

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "cifar10_cnn.py"
TRAIN_COUNT, TEST_COUNT = 460, 146


@pytest.fixture(scope="module")
def sample():
    try:
        x, y = cifar10.load_sample()
    except FileNotFoundError as err:
        pytest.skip(f"real CIFAR-10 images needed: {err}")
    y = y.reshape(-1, 1)  # (N, 1) like cifar10.load_data
    return (x[:TRAIN_COUNT], y[:TRAIN_COUNT]), (x[-TEST_COUNT:], y[-TEST_COUNT:])


def printed_number(out, label):
    match = re.search(rf"^{label}: (\S+)$", out, re.M)
    assert match, f"no '{label}:' line in the output"
    return float(match.group(1))


def test_cifar10_cnn_example_runs_learns_and_saves(sample, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("KERAS_HOME", str(tmp_path / "keras_home"))
    monkeypatch.chdir(tmp_path)
    backend._reset_for_tests()
    backend.clear_session()
    monkeypatch.setattr(cifar10, "load_data", lambda *args: tuple(
        (x.copy(), y.copy()) for x, y in sample))
    keras_utils.set_random_seed(0)
    source = EXAMPLE.read_text()
    assert source.count("epochs = 100\n") == 1
    source = source.replace("epochs = 100\n", "epochs = 2\n")
    namespace = {"__name__": "__main__", "__file__": str(EXAMPLE)}
    try:
        exec(compile(source, str(EXAMPLE), "exec"), namespace)
    finally:
        backend._reset_for_tests()
    out = capsys.readouterr().out
    lines = out.splitlines()
    model = namespace["model"]

    assert f"x_train shape: {(TRAIN_COUNT, 32, 32, 3)}" in lines
    assert f"{TRAIN_COUNT} train samples" in lines and f"{TEST_COUNT} test samples" in lines
    assert "Using real-time data augmentation." in lines
    assert "Epoch 1/2" in lines and "Epoch 2/2" in lines
    losses = model.history.history["loss"]
    assert len(losses) == 2 and all(math.isfinite(v) for v in losses)
    assert losses[1] < losses[0], losses
    assert set(model.history.history) >= {"loss", "accuracy", "val_loss", "val_accuracy"}
    test_loss = printed_number(out, "Test loss")
    test_accuracy = printed_number(out, "Test accuracy")
    assert math.isfinite(test_loss) and 0.0 <= test_accuracy <= 1.0

    saved = tmp_path / "saved_models" / "keras_cifar10_trained_model.h5"
    assert f"Saved trained model at {saved}" in lines
    loaded = load_model(saved)
    x_test = namespace["x_test"]
    np.testing.assert_allclose(loaded.predict(x_test), model.predict(x_test), rtol=1e-5,
                               atol=1e-6)
    assert loaded.evaluate(x_test, namespace["y_test"], verbose=0)[0] == pytest.approx(
        test_loss, rel=1e-5)
    assert float(loaded.optimizer.learning_rate) == pytest.approx(1e-4)
