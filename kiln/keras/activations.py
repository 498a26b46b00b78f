"""Keras activation names and numpy reference functions (`keras.activations`).

Layers pass the *name* to the engine, which fuses relu/tanh/sigmoid into conv and dense
primitives; the functions here let users pass `activation=activations.relu` as in Keras.
"""

import numpy as np


def linear(x):
    return x


def relu(x):
    return np.maximum(x, 0)


def tanh(x):
    return np.tanh(x)


def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def softmax(x, axis=-1):
    e = np.exp(x - np.max(x, axis=axis, keepdims=True))
    return e / np.sum(e, axis=axis, keepdims=True)


ALL = {f.__name__: f for f in (linear, relu, tanh, sigmoid, softmax)}


def get_name(identifier, context):
    """The canonical name of an activation given as None, a name or one of these functions."""
    if identifier is None:
        return "linear"
    if callable(identifier) and getattr(identifier, "__name__", None) in ALL:
        return identifier.__name__
    if isinstance(identifier, str) and identifier.lower() in ALL:
        return identifier.lower()
    raise ValueError(f"{context}: argument activation must be one of {sorted(ALL)}, "
                     f"got {identifier!r}")
