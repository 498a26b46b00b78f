"""Losses (`keras.losses`): functions on numpy arrays, Loss classes, and `get()`.

In a plan each built-in loss runs as a step kernel (kiln.ops.losses) that computes the same
value as these functions together with its gradient.
"""

from .functions import (
    KLD,
    MAE,
    MAPE,
    MSE,
    MSLE,
    binary_crossentropy,
    categorical_crossentropy,
    cosine_proximity,
    cosine_similarity,
    hinge,
    huber,
    kl_divergence,
    kld,
    kullback_leibler_divergence,
    log_cosh,
    logcosh,
    mae,
    mape,
    mean_absolute_error,
    mean_absolute_percentage_error,
    mean_squared_error,
    mean_squared_logarithmic_error,
    mse,
    msle,
    poisson,
    sparse_categorical_crossentropy,
    squared_hinge,
)
from .loss import (
    BinaryCrossentropy,
    CategoricalCrossentropy,
    CosineSimilarity,
    Hinge,
    Huber,
    KLDivergence,
    LogCosh,
    Loss,
    LossFunctionWrapper,
    MeanAbsoluteError,
    MeanAbsolutePercentageError,
    MeanSquaredError,
    MeanSquaredLogarithmicError,
    Poisson,
    SparseCategoricalCrossentropy,
    SquaredHinge,
    reduce_weighted_values,
)
from .registry import deserialize, get, serialize

__all__ = [
    "KLD", "MAE", "MAPE", "MSE", "MSLE", "BinaryCrossentropy", "CategoricalCrossentropy",
    "CosineSimilarity", "Hinge", "Huber", "KLDivergence", "LogCosh", "Loss",
    "LossFunctionWrapper", "MeanAbsoluteError", "MeanAbsolutePercentageError",
    "MeanSquaredError", "MeanSquaredLogarithmicError", "Poisson",
    "SparseCategoricalCrossentropy", "SquaredHinge", "binary_crossentropy",
    "categorical_crossentropy", "cosine_proximity", "cosine_similarity", "deserialize", "get",
    "hinge",
    "huber", "kl_divergence", "kld", "kullback_leibler_divergence", "log_cosh", "logcosh",
    "mae", "mape", "mean_absolute_error", "mean_absolute_percentage_error",
    "mean_squared_error", "mean_squared_logarithmic_error", "mse", "msle", "poisson",
    "reduce_weighted_values", "serialize", "sparse_categorical_crossentropy", "squared_hinge",
]
