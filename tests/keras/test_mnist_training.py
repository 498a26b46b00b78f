"""End-to-end training on the real MNIST (needs $KILN_DATASETS/mnist/, as .ci/run sets it).

* channels_last: the classic mnist_cnn (kiln.bench.models), two thirds of an epoch (the
  first 40,000 of the 60,000 training images, 313 steps of batch 128) with Adadelta, evaluated
  on all 10,000 test images: >= 96.5% is required (measured 97.4-97.7% over two seeds; a full
  epoch reaches 98.1%, as Keras's about 98%). Two thirds keep the suite within its budget.
* channels_first: the same model on a documented subset, the first 12,000 training images for
  one epoch, evaluated on the first 2,000 test images (measured 89.4%, 93.5% and 92.5% for
  seeds 0, 1 and 2 with the seeded initializers that draw Keras-JAX's values; 92.5-93.0%
  with the earlier draws; the bound is 88%). This keeps the file at about 30 s on 2 idle cores.
"""

import os
from pathlib import Path

import numpy as np
import pytest

from kiln import keras
from kiln.bench.models import mnist_cnn
from kiln.keras import initializers
from kiln.keras.datasets import mnist

DATASETS = os.environ.get("KILN_DATASETS")
HAS_MNIST = bool(DATASETS) and (Path(DATASETS) / "mnist").is_dir()

pytestmark = [
    pytest.mark.skipif(not HAS_MNIST, reason="real MNIST not available: set KILN_DATASETS to a "
                       "folder containing mnist/ with the four IDX files"),
    pytest.mark.usefixtures("kiln_keras_env"),
]


@pytest.fixture(scope="module")
def mnist_data():
    (x_train, y_train), (x_test, y_test) = mnist.load_data()
    assert x_train.shape == (60000, 28, 28) and x_test.shape == (10000, 28, 28)
    return (x_train, y_train), (x_test, y_test)


def prepare(images, labels, data_format):
    x = images.astype(np.float32) / 255
    x = x[:, :, :, None] if data_format == "channels_last" else x[:, None, :, :]
    return np.ascontiguousarray(x), keras.utils.to_categorical(labels, 10)


def train_and_evaluate(data, data_format, train_count, test_count, seed):
    (x_train, y_train), (x_test, y_test) = data
    initializers.set_random_seed(seed)  # weights, dropout seeds and the shuffling order
    model, shape, batch_size = mnist_cnn(data_format)
    assert batch_size == 128
    x, y = prepare(x_train[:train_count], y_train[:train_count], data_format)
    assert x.shape[1:] == shape
    history = model.fit(x, y, batch_size=batch_size, epochs=1, verbose=0)
    x, y = prepare(x_test[:test_count], y_test[:test_count], data_format)
    loss, accuracy = model.evaluate(x, y, verbose=0)
    return history.history, loss, accuracy


def test_mnist_cnn_channels_last_two_thirds_of_an_epoch(mnist_data):
    history, loss, accuracy = train_and_evaluate(mnist_data, "channels_last", 40000, 10000, 0)
    assert accuracy >= 0.965, f"test accuracy {accuracy:.4f} after 313 steps (loss {loss:.4f})"
    assert loss < 0.12
    assert history["accuracy"][0] > 0.85  # mean over the epoch, dropout on


def test_mnist_cnn_channels_first_subset(mnist_data):
    history, loss, accuracy = train_and_evaluate(mnist_data, "channels_first", 12000, 2000, 0)
    assert accuracy >= 0.88, f"test accuracy {accuracy:.4f} on 2000 images (loss {loss:.4f})"
    assert loss < 0.4
    assert np.isfinite(history["loss"][0])
