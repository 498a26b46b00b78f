"""Synthetic batches shared by every runner: same shapes, same values."""

import numpy as np

from ..architectures import (
    APPLICATION_CLASSES,
    APPLICATION_IMAGE,
    FINETUNE_CLASSES,
    IMDB_CNN_SHAPE,
    IMDB_RNN_SHAPE,
    TRANSFORMER_SHAPE,
)

BATCH = {"mnist_cnn": 128, "cifar10_cnn": 32, "resnet20": 128, "mobilenet_v2": 32,
         "unet": 32, "imdb_lstm": 32, "imdb_gru": 32, "imdb_cnn": 32,
         "transformer_encoder": 32, "resnet50": 16, "efficientnet_b0": 16,
         "resnet50_finetune": 16}
IMAGE = {"mnist_cnn": (28, 28, 1), "cifar10_cnn": (32, 32, 3), "resnet20": (32, 32, 3),
         "mobilenet_v2": (96, 96, 3), "unet": (64, 64, 1), "resnet50": APPLICATION_IMAGE,
         "efficientnet_b0": APPLICATION_IMAGE,
         "resnet50_finetune": APPLICATION_IMAGE}  # channels_last (H, W, C)
# the sequence models: (vocabulary, tokens per sequence)
TOKENS = {"imdb_lstm": IMDB_RNN_SHAPE[:2], "imdb_gru": IMDB_RNN_SHAPE[:2],
          "imdb_cnn": IMDB_CNN_SHAPE[:2], "transformer_encoder": TRANSFORMER_SHAPE[:2]}
TOKEN_CLASSES = {"transformer_encoder": 2}  # a softmax head: one-hot labels, not one 0/1
CLASSES = 10
# image classifiers with another number of classes than CLASSES
IMAGE_CLASSES = {"resnet50": APPLICATION_CLASSES, "efficientnet_b0": APPLICATION_CLASSES,
                 "resnet50_finetune": FINETUNE_CLASSES}
SEGMENTATION = {"unet"}  # labels are a per-pixel 0/1 mask of the image's shape


def batch(model, data_format, seed=0):
    """(x, y): x float32 in the Keras layout of `data_format`; y one-hot float32, or for a
    segmentation model a 0/1 float32 mask in the same layout as x. A sequence model: x int32
    token ids (batch, tokens) from 1 up (0 is padding), y a (batch, 1) float32 0/1 label, or
    one-hot float32 for one with a softmax head (TOKEN_CLASSES)."""
    rng = np.random.default_rng(seed)
    n = BATCH[model]
    if model in TOKENS:
        vocabulary, length = TOKENS[model]
        x = rng.integers(1, vocabulary, (n, length)).astype(np.int32)
        if model in TOKEN_CLASSES:
            classes = TOKEN_CLASSES[model]
            return x, np.eye(classes, dtype=np.float32)[rng.integers(0, classes, n)]
        return x, rng.integers(0, 2, (n, 1)).astype(np.float32)
    x = rng.random((n, *IMAGE[model]), dtype=np.float32)
    if model in SEGMENTATION:
        y = (x > 0.5).astype(np.float32)
    else:
        classes = IMAGE_CLASSES.get(model, CLASSES)
        y = np.eye(classes, dtype=np.float32)[rng.integers(0, classes, n)]
    if data_format == "channels_first":
        x = np.ascontiguousarray(x.transpose(0, 3, 1, 2))
        if model in SEGMENTATION:
            y = np.ascontiguousarray(y.transpose(0, 3, 1, 2))
    return x, y
