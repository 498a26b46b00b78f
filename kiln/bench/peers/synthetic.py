"""Synthetic batches shared by every runner: same shapes, same values."""

import numpy as np

BATCH = {"mnist_cnn": 128, "cifar10_cnn": 32, "resnet20": 128, "mobilenet_v2": 32,
         "unet": 32}
IMAGE = {"mnist_cnn": (28, 28, 1), "cifar10_cnn": (32, 32, 3), "resnet20": (32, 32, 3),
         "mobilenet_v2": (96, 96, 3), "unet": (64, 64, 1)}  # channels_last (H, W, C)
CLASSES = 10
SEGMENTATION = {"unet"}  # labels are a per-pixel 0/1 mask of the image's shape


def batch(model, data_format, seed=0):
    """(x, y): x float32 in the Keras layout of `data_format`; y one-hot float32, or for a
    segmentation model a 0/1 float32 mask in the same layout as x."""
    rng = np.random.default_rng(seed)
    n = BATCH[model]
    x = rng.random((n, *IMAGE[model]), dtype=np.float32)
    if model in SEGMENTATION:
        y = (x > 0.5).astype(np.float32)
    else:
        y = np.eye(CLASSES, dtype=np.float32)[rng.integers(0, CLASSES, n)]
    if data_format == "channels_first":
        x = np.ascontiguousarray(x.transpose(0, 3, 1, 2))
        if model in SEGMENTATION:
            y = np.ascontiguousarray(y.transpose(0, 3, 1, 2))
    return x, y
