"""Runs examples/mnist_cnn.py unchanged except `epochs = 12` -> `epochs = 1`, with
`mnist.load_data` returning a subset of the real MNIST (first 6,000 training and 1,000 test
images; needs $KILN_DATASETS/mnist/) or, without it, synthetic learnable digits. Both image data
formats, chosen like a user would: with keras.backend.set_image_data_format.

Measured test accuracy after the one epoch (seeds 0-2, both formats): real subset 0.889-0.905
(bound 0.8); synthetic 1.0 (bound 0.9).
"""

import os
import re
from pathlib import Path

import numpy as np
import pytest

from kiln.keras import backend, initializers
from kiln.keras.datasets import mnist

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "mnist_cnn.py"
DATASETS = os.environ.get("KILN_DATASETS")
HAS_MNIST = bool(DATASETS) and (Path(DATASETS) / "mnist").is_dir()
TRAIN_COUNT, TEST_COUNT = 6000, 1000


def synthetic_digits(count, seed):
    """uint8 (count, 28, 28) images: class k is a bright 6x6 square at one of ten places, on
    noise; labels uint8 like mnist.load_data."""
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 10, count).astype(np.uint8)
    images = rng.integers(0, 60, (count, 28, 28)).astype(np.uint8)
    for image, label in zip(images, labels):
        row, col = divmod(int(label), 5)
        top, left = 3 + row * 14 + rng.integers(-1, 2), 1 + col * 5 + rng.integers(0, 2)
        image[top:top + 6, left:left + 5] = 255
    return images, labels


@pytest.fixture(scope="module")
def data():
    if HAS_MNIST:
        (x_train, y_train), (x_test, y_test) = mnist.load_data()
        subset = ((x_train[:TRAIN_COUNT], y_train[:TRAIN_COUNT]),
                  (x_test[:TEST_COUNT], y_test[:TEST_COUNT]))
        return subset, 0.8
    return (synthetic_digits(TRAIN_COUNT, 1), synthetic_digits(TEST_COUNT, 2)), 0.9


@pytest.fixture
def isolated_keras(tmp_path, monkeypatch):
    """No user keras.json; the global data format is restored afterwards."""
    monkeypatch.setenv("KERAS_HOME", str(tmp_path))
    backend._reset_for_tests()
    yield
    backend._reset_for_tests()


def example_source():
    source = EXAMPLE.read_text()
    assert source.count("epochs = 12\n") == 1, "the example no longer sets epochs = 12"
    return source.replace("epochs = 12\n", "epochs = 1\n")


@pytest.mark.parametrize("data_format", ["channels_last", "channels_first"])
def test_mnist_cnn_example_runs_and_learns(data_format, data, isolated_keras, monkeypatch,
                                           capsys):
    subset, bound = data
    calls = []

    def load_data(*args, **kwargs):
        calls.append(args)
        (x_train, y_train), (x_test, y_test) = subset
        return (x_train.copy(), y_train.copy()), (x_test.copy(), y_test.copy())

    monkeypatch.setattr(mnist, "load_data", load_data)
    backend.set_image_data_format(data_format)
    initializers.set_random_seed(0)
    namespace = {"__name__": "__main__", "__file__": str(EXAMPLE)}
    exec(compile(example_source(), str(EXAMPLE), "exec"), namespace)
    out = capsys.readouterr().out

    assert calls == [()]
    shape = (28, 28, 1) if data_format == "channels_last" else (1, 28, 28)
    assert namespace["model"].layers[0].data_format == data_format
    assert f"x_train shape: {(TRAIN_COUNT, *shape)}" in out
    assert f"{TRAIN_COUNT} train samples" in out and f"{TEST_COUNT} test samples" in out
    lines = out.splitlines()
    assert lines.count("Epoch 1/1") == 1 and not any(line.startswith("Epoch 2/") for line in lines)
    steps = -(-TRAIN_COUNT // 128)
    epoch_line = lines[lines.index("Epoch 1/1") + 1]
    assert epoch_line.startswith(f"{steps}/{steps} - ") and " - val_accuracy: " in epoch_line

    loss = float(re.search(r"^Test loss: (\S+)$", out, re.M).group(1))
    accuracy = float(re.search(r"^Test accuracy: (\S+)$", out, re.M).group(1))
    assert np.isfinite(loss) and loss < 1.0
    assert accuracy >= bound, f"{data_format}: test accuracy {accuracy} < {bound}"
