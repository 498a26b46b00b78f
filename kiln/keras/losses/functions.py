"""Keras 3's loss functions on numpy arrays: per-sample values, same formulas, clips and
epsilons as `keras.losses.*` (computed in float64). Users call them directly; compile() maps
each to the step kernel that computes the same value (see registry.py). On symbolic tensors
the functions decorated with `on_tensors` are composed of keras.ops (symbolic_functions.py)."""

import numpy as np

from .. import backend
from .symbolic_functions import on_tensors


def _pair(y_true, y_pred):
    """float64 arrays, a trailing axis of 1 added or removed so the ranks agree (Keras'
    squeeze_or_expand_to_same_rank)."""
    y_pred = np.asarray(y_pred, dtype=np.float64)
    y_true = np.asarray(y_true, dtype=np.float64)
    if y_true.ndim == y_pred.ndim + 1 and y_true.shape[-1] == 1:
        if y_pred.ndim == 1:
            y_pred = y_pred[..., None]
        else:
            y_true = y_true[..., 0]
    elif y_pred.ndim == y_true.ndim + 1 and y_pred.shape[-1] == 1:
        if y_true.ndim == 1:
            y_true = y_true[..., None]
        else:
            y_pred = y_pred[..., 0]
    return y_true, y_pred


def categorical_crossentropy(y_true, y_pred, from_logits=False, label_smoothing=0.0, axis=-1):
    y_pred = np.asarray(y_pred, dtype=np.float64)
    y_true = np.asarray(y_true, dtype=np.float64)
    if label_smoothing:
        y_true = y_true * (1.0 - label_smoothing) + label_smoothing / y_true.shape[axis]
    return -np.sum(y_true * _log_probabilities(y_pred, from_logits, axis), axis=axis)


def _log_probabilities(y_pred, from_logits, axis=-1):
    if from_logits:
        shifted = y_pred - np.max(y_pred, axis=axis, keepdims=True)
        return shifted - np.log(np.sum(np.exp(shifted), axis=axis, keepdims=True))
    eps = backend.epsilon()
    y_pred = y_pred / np.sum(y_pred, axis=axis, keepdims=True)
    return np.log(np.clip(y_pred, eps, 1.0 - eps))


def sparse_categorical_crossentropy(y_true, y_pred, from_logits=False, ignore_class=None,
                                    axis=-1):
    if ignore_class is not None:
        raise ValueError("sparse_categorical_crossentropy: argument ignore_class is not "
                         f"supported by kiln yet (must be None), got {ignore_class!r}")
    y_pred = np.asarray(y_pred, dtype=np.float64)
    ids = np.asarray(y_true)
    if ids.ndim == y_pred.ndim and ids.shape[-1] == 1:
        ids = ids[..., 0]
    ids = ids.astype(np.int64)
    log_p = _log_probabilities(y_pred, from_logits, axis)
    return -np.take_along_axis(log_p, ids[..., None], axis=-1)[..., 0]


@on_tensors
def binary_crossentropy(y_true, y_pred, from_logits=False, label_smoothing=0.0, axis=-1):
    y_pred = np.asarray(y_pred, dtype=np.float64)
    y_true = np.asarray(y_true, dtype=np.float64)
    if label_smoothing:
        y_true = y_true * (1.0 - label_smoothing) + 0.5 * label_smoothing
    if from_logits:
        def log_sigmoid(x):
            return -(np.maximum(-x, 0) + np.log1p(np.exp(-np.abs(x))))
        values = -(y_true * log_sigmoid(y_pred) + (1 - y_true) * log_sigmoid(-y_pred))
    else:
        eps = backend.epsilon()
        p = np.clip(y_pred, eps, 1 - eps)
        values = -(y_true * np.log(p) + (1 - y_true) * np.log(1 - p))
    return np.mean(values, axis=axis)


@on_tensors
def mean_squared_error(y_true, y_pred):
    y_true, y_pred = _pair(y_true, y_pred)
    return np.mean(np.square(y_true - y_pred), axis=-1)


@on_tensors
def mean_absolute_error(y_true, y_pred):
    y_true, y_pred = _pair(y_true, y_pred)
    return np.mean(np.abs(y_true - y_pred), axis=-1)


def mean_absolute_percentage_error(y_true, y_pred):
    y_true, y_pred = _pair(y_true, y_pred)
    diff = np.abs((y_true - y_pred) / np.maximum(np.abs(y_true), backend.epsilon()))
    return 100.0 * np.mean(diff, axis=-1)


def mean_squared_logarithmic_error(y_true, y_pred):
    y_true, y_pred = _pair(y_true, y_pred)
    eps = backend.epsilon()
    first = np.log(np.maximum(y_pred, eps) + 1.0)
    second = np.log(np.maximum(y_true, eps) + 1.0)
    return np.mean(np.square(first - second), axis=-1)


def huber(y_true, y_pred, delta=1.0):
    y_true, y_pred = _pair(y_true, y_pred)
    error = y_pred - y_true
    small = np.abs(error) <= delta
    return np.mean(np.where(small, 0.5 * error ** 2, delta * np.abs(error) - 0.5 * delta ** 2),
                   axis=-1)


def log_cosh(y_true, y_pred):
    y_true, y_pred = _pair(y_true, y_pred)
    x = y_pred - y_true
    return np.mean(x + np.logaddexp(0.0, -2.0 * x) - np.log(2.0), axis=-1)


def _hinge_labels(y_true):
    return 2.0 * y_true - 1.0 if np.all((y_true == 0) | (y_true == 1)) else y_true


def hinge(y_true, y_pred):
    y_true, y_pred = _pair(y_true, y_pred)
    return np.mean(np.maximum(1.0 - _hinge_labels(y_true) * y_pred, 0.0), axis=-1)


def squared_hinge(y_true, y_pred):
    y_true, y_pred = _pair(y_true, y_pred)
    return np.mean(np.square(np.maximum(1.0 - _hinge_labels(y_true) * y_pred, 0.0)), axis=-1)


def kl_divergence(y_true, y_pred):
    y_true, y_pred = _pair(y_true, y_pred)
    eps = backend.epsilon()
    y_true, y_pred = np.clip(y_true, eps, 1), np.clip(y_pred, eps, 1)
    return np.sum(y_true * np.log(y_true / y_pred), axis=-1)


def poisson(y_true, y_pred):
    y_true, y_pred = _pair(y_true, y_pred)
    return np.mean(y_pred - y_true * np.log(y_pred + backend.epsilon()), axis=-1)


def cosine_similarity(y_true, y_pred, axis=-1):
    y_true, y_pred = _pair(y_true, y_pred)
    eps = backend.epsilon()

    def normalize(x):
        square_sum = np.sum(np.square(x), axis=axis, keepdims=True)
        with np.errstate(divide="ignore"):
            return x * np.minimum(1.0 / np.sqrt(square_sum), 1.0 / eps)

    return -np.sum(normalize(y_true) * normalize(y_pred), axis=axis)


# Keras 3 short names and the Keras 2 spellings of the same functions
mse = MSE = mean_squared_error
mae = MAE = mean_absolute_error
mape = MAPE = mean_absolute_percentage_error
msle = MSLE = mean_squared_logarithmic_error
kld = KLD = kullback_leibler_divergence = kl_divergence
logcosh = log_cosh
cosine_proximity = cosine_similarity
