"""Keras metric classes that average a loss-like function per sample (`Accuracy`, the
cross-entropies, KL divergence, Poisson, hinges, MAPE, MSLE, log-cosh, cosine similarity).

In fit / evaluate they are updated after each step from the output and label buffers the plan
leaves (numpy over one batch); the metrics people use most (accuracies, MSE / MAE / RMSE,
AUC, Precision, Recall) have kernels in the step instead.
"""

import numpy as np

from ..losses import functions
from .reduction_metrics import MeanMetricWrapper


def accuracy(y_true, y_pred):
    """1 where the prediction equals the label exactly (Keras' `accuracy` function)."""
    y_true, y_pred = functions._pair(y_true, y_pred)
    return (y_true == y_pred).astype(np.float32)


def cosine_similarity(y_true, y_pred, axis=-1):
    """The metric is the similarity itself (the loss is its negative)."""
    return -functions.cosine_similarity(y_true, y_pred, axis=axis)


def _metric_class(class_name, fn, default_name, **defaults):
    def __init__(self, name=default_name, dtype=None, **kwargs):
        unknown = set(kwargs) - set(defaults)
        if unknown:
            raise TypeError(f"{class_name}: unexpected keyword argument(s) {sorted(unknown)}")
        MeanMetricWrapper.__init__(self, fn, name=name, dtype=dtype, **{**defaults, **kwargs})

    return type(class_name, (MeanMetricWrapper,), {"__init__": __init__})


Accuracy = _metric_class("Accuracy", accuracy, "accuracy")
BinaryCrossentropy = _metric_class("BinaryCrossentropy", functions.binary_crossentropy,
                                   "binary_crossentropy", from_logits=False,
                                   label_smoothing=0.0)
CategoricalCrossentropy = _metric_class(
    "CategoricalCrossentropy", functions.categorical_crossentropy, "categorical_crossentropy",
    from_logits=False, label_smoothing=0.0)
SparseCategoricalCrossentropy = _metric_class(
    "SparseCategoricalCrossentropy", functions.sparse_categorical_crossentropy,
    "sparse_categorical_crossentropy", from_logits=False)
KLDivergence = _metric_class("KLDivergence", functions.kl_divergence, "kl_divergence")
Poisson = _metric_class("Poisson", functions.poisson, "poisson")
Hinge = _metric_class("Hinge", functions.hinge, "hinge")
SquaredHinge = _metric_class("SquaredHinge", functions.squared_hinge, "squared_hinge")
MeanAbsolutePercentageError = _metric_class(
    "MeanAbsolutePercentageError", functions.mean_absolute_percentage_error,
    "mean_absolute_percentage_error")
MeanSquaredLogarithmicError = _metric_class(
    "MeanSquaredLogarithmicError", functions.mean_squared_logarithmic_error,
    "mean_squared_logarithmic_error")
LogCoshError = _metric_class("LogCoshError", functions.log_cosh, "logcosh")
CosineSimilarity = _metric_class("CosineSimilarity", cosine_similarity, "cosine_similarity",
                                 axis=-1)
