"""Synthetic batches shared by every runner: same shapes, same values."""

import numpy as np

BATCH = {"mnist_cnn": 128, "cifar10_cnn": 32, "resnet20": 128}
IMAGE = {"mnist_cnn": (28, 28, 1), "cifar10_cnn": (32, 32, 3),
         "resnet20": (32, 32, 3)}  # channels_last (H, W, C)
CLASSES = 10


def batch(model, data_format, seed=0):
    """(x, y): x float32 in the Keras layout of `data_format`, y one-hot float32."""
    rng = np.random.default_rng(seed)
    n = BATCH[model]
    x = rng.random((n, *IMAGE[model]), dtype=np.float32)
    if data_format == "channels_first":
        x = np.ascontiguousarray(x.transpose(0, 3, 1, 2))
    y = np.eye(CLASSES, dtype=np.float32)[rng.integers(0, CLASSES, n)]
    return x, y
