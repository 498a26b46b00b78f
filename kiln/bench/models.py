"""The benchmark models, written with kiln.keras exactly as the classic Keras examples."""

import numpy as np

from .. import keras
from ..keras.layers import Activation, Conv2D, Dense, Dropout, Flatten, MaxPooling2D


def mnist_cnn(data_format):
    """keras/examples/mnist_cnn.py: batch 128, 10 classes."""
    keras.backend.clear_session()  # layer names as in a fresh script: conv2d, conv2d_1, ...
    shape = (28, 28, 1) if data_format == "channels_last" else (1, 28, 28)
    model = keras.Sequential([
        Conv2D(32, (3, 3), activation="relu", input_shape=shape, data_format=data_format),
        Conv2D(64, (3, 3), activation="relu", data_format=data_format),
        MaxPooling2D((2, 2), data_format=data_format),
        Dropout(0.25),
        Flatten(data_format=data_format),
        Dense(128, activation="relu"),
        Dropout(0.5),
        Dense(10, activation="softmax"),
    ])
    model.compile(loss="categorical_crossentropy", optimizer=keras.optimizers.Adadelta(),
                  metrics=["accuracy"])
    return model, shape, 128


def cifar10_cnn(data_format):
    """keras/examples/cifar10_cnn.py: batch 32, RMSprop(lr=1e-4, decay=1e-6)."""
    keras.backend.clear_session()
    shape = (32, 32, 3) if data_format == "channels_last" else (3, 32, 32)
    f = dict(data_format=data_format)
    model = keras.Sequential([
        Conv2D(32, (3, 3), padding="same", input_shape=shape, **f), Activation("relu"),
        Conv2D(32, (3, 3), **f), Activation("relu"),
        MaxPooling2D((2, 2), **f), Dropout(0.25),
        Conv2D(64, (3, 3), padding="same", **f), Activation("relu"),
        Conv2D(64, (3, 3), **f), Activation("relu"),
        MaxPooling2D((2, 2), **f), Dropout(0.25),
        Flatten(**f), Dense(512), Activation("relu"), Dropout(0.5),
        Dense(10), Activation("softmax"),
    ])
    model.compile(loss="categorical_crossentropy",
                  optimizer=keras.optimizers.RMSprop(learning_rate=1e-4, decay=1e-6),
                  metrics=["accuracy"])
    return model, shape, 32


MODELS = {"mnist_cnn": mnist_cnn, "cifar10_cnn": cifar10_cnn}


def forward_flops_per_layer(model, batch):
    """2 x multiply-adds of the forward pass of each conv and dense layer, in order."""
    flops = []
    for layer in model.layers:
        kernel = getattr(layer, "kernel", None)
        if kernel is None:
            continue
        forward = 2.0 * batch * np.prod(kernel.shape)
        if len(kernel.shape) == 4:  # each output pixel does a kernel's worth of work
            out = layer.output_shape
            forward *= np.prod(out[1:3] if model.data_format == "channels_last" else out[2:4])
        flops.append(float(forward))
    return flops


def training_flops(model, batch):
    """Forward, backward-data (not for the first layer) and backward-weights: the work a
    training step must do (9.160 GFLOP for mnist_cnn at batch 128)."""
    per_layer = forward_flops_per_layer(model, batch)
    return sum(f * (2 if i == 0 else 3) for i, f in enumerate(per_layer))


def inference_flops(model, batch):
    return sum(forward_flops_per_layer(model, batch))
