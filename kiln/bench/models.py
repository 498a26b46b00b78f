"""The benchmark models, written with kiln.keras exactly as the classic Keras examples
(resnet20 with the functional API, as a Keras user writes it)."""

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


def resnet20(data_format):
    """keras/examples/cifar10_resnet.py, resnet_v1(depth=20): batch 128, Adam(1e-3).

    The example's kernel_regularizer=l2(1e-4) is left out (kiln has no regularizers yet), and
    left out of every peer's copy alike."""
    keras.backend.clear_session()
    layers = keras.layers
    shape = (32, 32, 3) if data_format == "channels_last" else (3, 32, 32)
    f = dict(data_format=data_format)
    channel_axis = -1 if data_format == "channels_last" else 1

    def resnet_layer(x, filters=16, kernel_size=3, strides=1, activation="relu",
                     batch_normalization=True):
        x = layers.Conv2D(filters, kernel_size=kernel_size, strides=strides, padding="same",
                          kernel_initializer="he_normal", **f)(x)
        if batch_normalization:
            x = layers.BatchNormalization(axis=channel_axis)(x)
        if activation is not None:
            x = layers.Activation(activation)(x)
        return x

    inputs = keras.Input(shape=shape)
    x = resnet_layer(inputs)
    filters = 16
    for stack in range(3):
        for block in range(3):
            strides = 2 if stack > 0 and block == 0 else 1
            y = resnet_layer(x, filters, strides=strides)
            y = resnet_layer(y, filters, activation=None)
            if strides == 2:  # projection shortcut: 1x1 conv, no BN, no activation
                x = resnet_layer(x, filters, kernel_size=1, strides=strides, activation=None,
                                 batch_normalization=False)
            x = layers.add([x, y])
            x = layers.Activation("relu")(x)
        filters *= 2
    x = layers.AveragePooling2D(pool_size=8, **f)(x)
    y = layers.Flatten(**f)(x)
    outputs = layers.Dense(10, activation="softmax", kernel_initializer="he_normal")(y)
    model = keras.Model(inputs=inputs, outputs=outputs)
    model.compile(loss="categorical_crossentropy",
                  optimizer=keras.optimizers.Adam(learning_rate=1e-3), metrics=["accuracy"])
    return model, shape, 128


MODELS = {"mnist_cnn": mnist_cnn, "cifar10_cnn": cifar10_cnn, "resnet20": resnet20}


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
