"""Keras 3 on TensorFlow or JAX (the worker sets KERAS_BACKEND before this is imported):
the same architectures, compiled train_on_batch / predict_on_batch, as a Keras user runs."""

import os

from . import synthetic

BACKEND = os.environ.get("KERAS_BACKEND", "tensorflow")
AVAILABLE = None


def _resnet20(keras, data_format):
    """resnet_v1(depth=20) of keras/examples/cifar10_resnet.py, as kiln.bench.models has it
    (no l2 regularizer, like kiln's copy)."""
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
    return keras.Model(inputs=inputs, outputs=outputs)


def _model(keras, model, data_format):
    layers = keras.layers
    f = dict(data_format=data_format)
    if model == "resnet20":
        net = _resnet20(keras, data_format)
        optimizer = keras.optimizers.Adam(learning_rate=1e-3)
    elif model == "mnist_cnn":
        shape = (28, 28, 1) if data_format == "channels_last" else (1, 28, 28)
        net = keras.Sequential([
            keras.Input(shape), layers.Conv2D(32, (3, 3), activation="relu", **f),
            layers.Conv2D(64, (3, 3), activation="relu", **f), layers.MaxPooling2D((2, 2), **f),
            layers.Dropout(0.25), layers.Flatten(**f), layers.Dense(128, activation="relu"),
            layers.Dropout(0.5), layers.Dense(10, activation="softmax")])
        optimizer = keras.optimizers.Adadelta(learning_rate=1.0)
    else:
        shape = (32, 32, 3) if data_format == "channels_last" else (3, 32, 32)
        net = keras.Sequential([
            keras.Input(shape), layers.Conv2D(32, (3, 3), padding="same", **f),
            layers.Activation("relu"), layers.Conv2D(32, (3, 3), **f), layers.Activation("relu"),
            layers.MaxPooling2D((2, 2), **f), layers.Dropout(0.25),
            layers.Conv2D(64, (3, 3), padding="same", **f), layers.Activation("relu"),
            layers.Conv2D(64, (3, 3), **f), layers.Activation("relu"),
            layers.MaxPooling2D((2, 2), **f), layers.Dropout(0.25), layers.Flatten(**f),
            layers.Dense(512), layers.Activation("relu"), layers.Dropout(0.5), layers.Dense(10),
            layers.Activation("softmax")])
        optimizer = keras.optimizers.RMSprop(learning_rate=1e-4)
    net.compile(loss="categorical_crossentropy", optimizer=optimizer, metrics=["accuracy"])
    return net


def unsupported(model, data_format, mode, precision):
    return None


def prepare(model, data_format, mode, precision):
    import keras
    keras.mixed_precision.set_global_policy("mixed_bfloat16" if precision == "bf16"
                                            else "float32")
    net = _model(keras, model, data_format)
    x, y = synthetic.batch(model, data_format)
    if mode == "train":
        return lambda: net.train_on_batch(x, y)
    return lambda: net.predict_on_batch(x)
