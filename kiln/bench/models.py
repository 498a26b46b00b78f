"""The benchmark models, written with kiln.keras exactly as the classic Keras examples
(resnet20 with the functional API, as a Keras user writes it)."""

import numpy as np

from .. import keras
from ..keras.layers import Activation, Conv2D, Dense, Dropout, Flatten, MaxPooling2D
from . import architectures


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


def resnet20(data_format):
    """keras/examples/cifar10_resnet.py, resnet_v1(depth=20): batch 128, Adam(1e-3)
    (architectures.resnet20, without the example's l2 regularizer)."""
    keras.backend.clear_session()
    model = architectures.resnet20(keras, data_format)
    model.compile(loss="categorical_crossentropy",
                  optimizer=keras.optimizers.Adam(learning_rate=1e-3), metrics=["accuracy"])
    shape = (32, 32, 3) if data_format == "channels_last" else (3, 32, 32)
    return model, shape, 128


def mobilenet_v2(data_format):
    """Keras' MobileNetV2 topology (alpha 1.0) on 96x96x3, 10 classes, batch 32, Adam(1e-3)."""
    keras.backend.clear_session()
    model = architectures.mobilenet_v2(keras, data_format)
    model.compile(loss="categorical_crossentropy",
                  optimizer=keras.optimizers.Adam(learning_rate=1e-3), metrics=["accuracy"])
    shape = (96, 96, 3) if data_format == "channels_last" else (3, 96, 96)
    return model, shape, 32


def unet(data_format):
    """A small U-Net (architectures.unet) on 64x64x1, per-pixel sigmoid with binary
    cross-entropy, batch 32, Adam(1e-3)."""
    keras.backend.clear_session()
    model = architectures.unet(keras, data_format)
    model.compile(loss="binary_crossentropy",
                  optimizer=keras.optimizers.Adam(learning_rate=1e-3), metrics=["accuracy"])
    shape = (64, 64, 1) if data_format == "channels_last" else (1, 64, 64)
    return model, shape, 32


MODELS = {"mnist_cnn": mnist_cnn, "cifar10_cnn": cifar10_cnn, "resnet20": resnet20,
          "mobilenet_v2": mobilenet_v2, "unet": unet}


def built(name, data_format="channels_last"):
    """(model, batch) with its weights made: a Sequential model is built here, a functional
    one already was when it was called on its inputs."""
    model, _, batch = MODELS[name](data_format)
    if not model.built:
        model.build()
    return model, batch


def output_shape(layer):
    """A layer's Keras output shape: `output_shape` (Sequential), else `output.shape` (the
    functional API, and Keras 3, which has no `output_shape`)."""
    shape = getattr(layer, "output_shape", None)
    if shape is None:
        shape = layer.output.shape
    return tuple(shape)


def forward_flops_per_layer(model, batch):
    """2 x multiply-adds of the forward pass of each conv and dense layer of `model.layers`,
    in order (batch normalization, pooling, adds and activations are not counted)."""
    flops = []
    for layer in model.layers:
        kernel = getattr(layer, "kernel", None)
        if kernel is None:
            continue
        forward = 2.0 * batch * np.prod(kernel.shape)
        if len(kernel.shape) == 4:  # each output pixel does a kernel's worth of work
            out = output_shape(layer)
            forward *= np.prod(out[1:3] if layer.data_format == "channels_last" else out[2:4])
        flops.append(float(forward))
    return flops


def training_flops(model, batch):
    """Forward, backward-data (not for the first layer) and backward-weights: the work a
    training step must do, at batch 128: 9.160 GFLOP for mnist_cnn, 31.231 for resnet20
    (inference 10.448)."""
    per_layer = forward_flops_per_layer(model, batch)
    return sum(f * (2 if i == 0 else 3) for i, f in enumerate(per_layer))


def inference_flops(model, batch):
    return sum(forward_flops_per_layer(model, batch))
