"""Keras activation names and numpy reference functions (`keras.activations`).

Layers pass the *name* to the engine (kiln.ops.eltwise's table), which fuses what oneDNN can
compute into conv and dense primitives; the functions here let users pass
`activation=activations.relu` as in Keras, and compute the same values on numpy arrays.
"""

import math

import numpy as np

from ..ops.eltwise import ALIASES


def linear(x):
    return x


def relu(x, negative_slope=0.0, max_value=None, threshold=0.0):
    x = np.asarray(x)
    y = np.where(x > threshold, x, 0.0)
    if max_value is not None:
        y = np.clip(y, 0.0, max_value)
    return (y - negative_slope * np.maximum(threshold - x, 0.0)).astype(x.dtype)


def relu6(x):
    return np.clip(x, 0, 6)


def leaky_relu(x, negative_slope=0.2):
    return np.where(x > 0, x, negative_slope * x)


def elu(x, alpha=1.0):
    return np.where(x > 0, x, alpha * np.expm1(np.minimum(x, 0)))


def selu(x):
    return 1.0507009873554805 * elu(x, 1.6732632423543772)


def gelu(x, approximate=False):
    x = np.asarray(x)
    if approximate:
        return 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3)))
    return (0.5 * x * (1 + np.vectorize(math.erf)(x / np.sqrt(2)))).astype(x.dtype)


def tanh(x):
    return np.tanh(x)


def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def silu(x):
    return x * sigmoid(x)


def hard_sigmoid(x):
    return np.clip(np.asarray(x) + 3, 0, 6) / 6


def hard_silu(x):
    return x * hard_sigmoid(x)


def softplus(x):
    return np.logaddexp(0, x)


def softsign(x):
    return x / (1 + np.abs(x))


def exponential(x):
    return np.exp(x)


def mish(x):
    return x * np.tanh(softplus(x))


def softmax(x, axis=-1):
    e = np.exp(x - np.max(x, axis=axis, keepdims=True))
    return e / np.sum(e, axis=axis, keepdims=True)


def log_softmax(x, axis=-1):
    shifted = x - np.max(x, axis=axis, keepdims=True)
    return shifted - np.log(np.sum(np.exp(shifted), axis=axis, keepdims=True))


swish = silu
hard_swish = hard_silu

ALL = {f.__name__: f for f in (linear, relu, relu6, leaky_relu, elu, selu, gelu, tanh, sigmoid,
                               silu, hard_sigmoid, hard_silu, softplus, softsign, exponential,
                               mish, softmax, log_softmax)}


def get_name(identifier, context):
    """The canonical Keras name of an activation given as None, a name (Keras's aliases
    'swish' and 'hard_swish' included) or one of these functions."""
    if identifier is None:
        return "linear"
    name = None
    if callable(identifier):
        name = getattr(identifier, "__name__", None)
    elif isinstance(identifier, str):
        name = identifier.lower()
    name = ALIASES.get(name, name)
    if name in ALL:  # a function is known by its name, as Keras serializes it
        return name
    raise ValueError(f"{context}: argument activation must be one of "
                     f"{sorted(ALL) + sorted(ALIASES)}, got {identifier!r}")
