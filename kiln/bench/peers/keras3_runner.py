"""Keras 3 on TensorFlow or JAX (the worker sets KERAS_BACKEND before this is imported):
the same architectures, compiled train_on_batch / predict_on_batch, as a Keras user runs."""

import os

from .. import architectures
from . import synthetic

BACKEND = os.environ.get("KERAS_BACKEND", "tensorflow")
AVAILABLE = None


def _model(keras, model, data_format):
    layers = keras.layers
    f = dict(data_format=data_format)
    loss = "categorical_crossentropy"
    if model in ("imdb_lstm", "imdb_gru", "imdb_cnn"):
        net = (architectures.imdb_cnn(keras) if model == "imdb_cnn"
               else architectures.imdb_rnn(keras, "LSTM" if model == "imdb_lstm" else "GRU"))
        optimizer = keras.optimizers.Adam(learning_rate=1e-3)
        loss = "binary_crossentropy"
    elif model == "transformer_encoder":
        net = architectures.transformer_encoder(keras)
        optimizer = keras.optimizers.Adam(learning_rate=1e-3)
    elif model in ("resnet50", "efficientnet_b0", "resnet50_finetune"):
        net = getattr(architectures, model)(keras, data_format)
        optimizer = keras.optimizers.Adam(learning_rate=1e-3)
    elif model == "resnet20":
        net = architectures.resnet20(keras, data_format)
        optimizer = keras.optimizers.Adam(learning_rate=1e-3)
    elif model == "mobilenet_v2":
        net = architectures.mobilenet_v2(keras, data_format)
        optimizer = keras.optimizers.Adam(learning_rate=1e-3)
    elif model == "unet":
        net = architectures.unet(keras, data_format)
        optimizer = keras.optimizers.Adam(learning_rate=1e-3)
        loss = "binary_crossentropy"
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
    net.compile(loss=loss, optimizer=optimizer, metrics=["accuracy"])
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
