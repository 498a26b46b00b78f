"""Kernels that accumulate Keras metrics in the step, reading the model output the loss head
left in a plain (N, features) buffer and the step's labels: no second pass over the data.

Each adds into a float64 state array the metric owns (Keras' `total` / `count` variables,
or confusion counts), so plans of every batch size feed the same metric and the trainer only
resets and reads it. `weights` are the sample weights (ones for metrics Keras does not weight).
"""

import numpy as np

from ..numba_config import SERIAL, njit

# mean-error kinds, per sample the mean over the last axis (RMSE takes the root at the end)
SQUARED_ERROR, ABSOLUTE_ERROR = 0, 1


@njit(**SERIAL)
def _argmax(values, row):
    best, arg = values[row, 0], 0
    for j in range(1, values.shape[1]):
        if values[row, j] > best:
            best, arg = values[row, j], j
    return arg


@njit(**SERIAL)
def _rank_hit(predictions, row, label, k):
    """Keras' in_top_k: fewer than k outputs strictly above the label's."""
    above = 0
    target = predictions[row, label]
    for j in range(predictions.shape[1]):
        if predictions[row, j] > target:
            above += 1
    return above < k


@njit(**SERIAL)
def categorical_accuracy_kernel(predictions, labels, weights, top_k, state):
    """top_k 1: argmax match (categorical_accuracy); else top_k_categorical_accuracy."""
    for row in range(predictions.shape[0]):
        label = _argmax(labels, row)
        if top_k == 1:
            hit = _argmax(predictions, row) == label
        else:
            hit = _rank_hit(predictions, row, label, top_k)
        state[0] += weights[row] * hit
        state[1] += weights[row]


@njit(**SERIAL)
def sparse_accuracy_kernel(predictions, ids, weights, top_k, state):
    for row in range(predictions.shape[0]):
        label = int(ids[row])
        if top_k == 1:
            hit = _argmax(predictions, row) == ids[row]
        else:
            hit = _rank_hit(predictions, row, label, top_k)
        state[0] += weights[row] * hit
        state[1] += weights[row]


@njit(**SERIAL)
def binary_accuracy_kernel(predictions, labels, weights, threshold, state):
    n, k = predictions.shape
    for row in range(n):
        matches = 0.0
        for j in range(k):
            matches += (1.0 if predictions[row, j] > threshold else 0.0) == labels[row, j]
        state[0] += weights[row] * matches / k
        state[1] += weights[row]


@njit(**SERIAL)
def mean_error_kernel(predictions, labels, weights, kind, state):
    n, k = predictions.shape
    for row in range(n):
        error = 0.0
        for j in range(k):
            d = predictions[row, j] - labels[row, j]
            error += d * d if kind == SQUARED_ERROR else abs(d)
        state[0] += weights[row] * error / k
        state[1] += weights[row]


@njit(**SERIAL)
def confusion_kernel(predictions, labels, weights, thresholds, state):
    """state (4, T): true positives, false positives, true negatives, false negatives at each
    threshold, a prediction counting as positive when it is above the threshold."""
    n, k = predictions.shape
    for row in range(n):
        w = weights[row]
        for j in range(k):
            p = min(max(predictions[row, j], 0.0), 1.0)
            positive = labels[row, j] != 0.0
            for t in range(thresholds.shape[0]):
                if p > thresholds[t]:
                    state[0 if positive else 1, t] += w
                else:
                    state[3 if positive else 2, t] += w


@njit(**SERIAL)
def sigmoid_confusion_kernel(predictions, labels, weights, thresholds, state):
    """confusion_kernel on sigmoid(predictions) (metrics given from_logits=True)."""
    n, k = predictions.shape
    for row in range(n):
        w = weights[row]
        for j in range(k):
            p = 1.0 / (1.0 + np.exp(-predictions[row, j]))
            positive = labels[row, j] != 0.0
            for t in range(thresholds.shape[0]):
                if p > thresholds[t]:
                    state[0 if positive else 1, t] += w
                else:
                    state[3 if positive else 2, t] += w
