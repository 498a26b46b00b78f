"""Losses (`keras.losses`). Numpy functions with Keras semantics; in training the engine runs
categorical cross-entropy fused with the softmax that precedes it."""

import numpy as np

from . import backend


def categorical_crossentropy(y_true, y_pred):
    """Per-sample -sum(y_true * log(y_pred)), y_pred normalized and clipped as in Keras."""
    y_pred = np.asarray(y_pred, dtype=np.float64)
    y_pred = y_pred / np.sum(y_pred, axis=-1, keepdims=True)
    eps = backend.epsilon()
    return -np.sum(np.asarray(y_true) * np.log(np.clip(y_pred, eps, 1.0 - eps)), axis=-1)


class CategoricalCrossentropy:
    def __init__(self, from_logits=False):
        if from_logits:
            raise ValueError("CategoricalCrossentropy: argument from_logits must be False "
                             "(end the model with a softmax)")
        self.__name__ = "categorical_crossentropy"

    def __call__(self, y_true, y_pred):
        return float(np.mean(categorical_crossentropy(y_true, y_pred)))


SUPPORTED = {"categorical_crossentropy": categorical_crossentropy}


def get_name(identifier):
    """The canonical loss name for a Keras loss given by name, function or instance."""
    name = identifier if isinstance(identifier, str) else getattr(identifier, "__name__", None)
    if name in SUPPORTED:
        return name
    raise ValueError(f"compile: argument loss must be one of {sorted(SUPPORTED)} (or its "
                     f"function), got {identifier!r}")
