"""Small models and numpy references shared by the model tests."""

import numpy as np

from kiln import keras
from kiln.keras.layers import Conv2D, Dense, Dropout, Flatten, MaxPooling2D
from kiln.keras.optimizers import SGD

CL, CF = "channels_last", "channels_first"
EPS = 1e-7


def quadrant_data(count, data_format=CL, seed=0):
    """8x8 one-channel images; the class (0-3) is the quadrant that holds a bright blob."""
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 4, count)
    x = rng.uniform(0, 0.3, (count, 8, 8, 1)).astype(np.float32)
    for i, label in enumerate(labels):
        top, left = divmod(int(label), 2)
        x[i, top * 4 + 1:top * 4 + 3, left * 4 + 1:left * 4 + 3, 0] += 1.0
    if data_format == CF:
        x = np.ascontiguousarray(x.transpose(0, 3, 1, 2))
    return x, keras.utils.to_categorical(labels, 4)


def small_cnn(data_format=CL, dropout=0.0, seed=None, name=None):
    shape = (8, 8, 1) if data_format == CL else (1, 8, 8)
    layers = [Conv2D(4, 3, activation="relu", input_shape=shape, data_format=data_format),
              MaxPooling2D(data_format=data_format)]
    if dropout:
        layers.append(Dropout(dropout, seed=seed))
    layers += [Flatten(data_format=data_format), Dense(4, activation="softmax")]
    return keras.Sequential(layers, name=name)


def crossentropy_ref(y, p):
    p = np.asarray(p, np.float64)
    p = p / p.sum(axis=-1, keepdims=True)
    return -np.sum(y * np.log(np.clip(p, EPS, 1 - EPS)), axis=-1)


def accuracy_ref(y, p):
    return np.mean(np.argmax(y, -1) == np.argmax(p, -1))


def compiled_cnn(optimizer=None, data_format=CL, **kwargs):
    model = small_cnn(data_format, **kwargs)
    model.compile(loss="categorical_crossentropy", optimizer=optimizer or SGD(lr=0.1),
                  metrics=["accuracy"])
    return model
