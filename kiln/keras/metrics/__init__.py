"""Metrics (`keras.metrics`): functions on numpy arrays, stateful Metric classes, `get()`.

In fit / evaluate each metric is updated inside the step by a kernel over the buffers the loss
head leaves (see metric.py), so metrics cost no second pass over the data.
"""

from ..losses import functions as _loss_functions
from .accuracy_metrics import (
    BinaryAccuracy,
    CategoricalAccuracy,
    SparseCategoricalAccuracy,
    SparseTopKCategoricalAccuracy,
    TopKCategoricalAccuracy,
    binary_accuracy,
    categorical_accuracy,
    sparse_categorical_accuracy,
    sparse_top_k_categorical_accuracy,
    top_k_categorical_accuracy,
)
from .confusion_metrics import AUC, Precision, Recall
from .function_metrics import (
    Accuracy,
    BinaryCrossentropy,
    CategoricalCrossentropy,
    CosineSimilarity,
    Hinge,
    KLDivergence,
    LogCoshError,
    MeanAbsolutePercentageError,
    MeanSquaredLogarithmicError,
    Poisson,
    SparseCategoricalCrossentropy,
    SquaredHinge,
    accuracy,
    cosine_similarity,
)
from .metric import Metric
from .reduction_metrics import Mean, MeanMetricWrapper
from .regression_metrics import MeanAbsoluteError, MeanSquaredError, RootMeanSquaredError

mean_squared_error = mse = _loss_functions.mean_squared_error
mean_absolute_error = mae = _loss_functions.mean_absolute_error
mean_absolute_percentage_error = mape = _loss_functions.mean_absolute_percentage_error
mean_squared_logarithmic_error = msle = _loss_functions.mean_squared_logarithmic_error
binary_crossentropy = _loss_functions.binary_crossentropy
categorical_crossentropy = _loss_functions.categorical_crossentropy
sparse_categorical_crossentropy = _loss_functions.sparse_categorical_crossentropy
hinge = _loss_functions.hinge
squared_hinge = _loss_functions.squared_hinge
kl_divergence = _loss_functions.kl_divergence
poisson = _loss_functions.poisson
log_cosh = logcosh = _loss_functions.log_cosh

# string -> class or function, as keras.metrics.get (class names, snake-case names, the
# Keras 2 short names)
_CLASSES = {cls.__name__: cls for cls in (
    AUC, Accuracy, BinaryAccuracy, BinaryCrossentropy, CategoricalAccuracy,
    CategoricalCrossentropy, CosineSimilarity, Hinge, KLDivergence, LogCoshError, Mean,
    MeanAbsoluteError, MeanAbsolutePercentageError, MeanSquaredError,
    MeanSquaredLogarithmicError, Poisson, Precision, Recall, RootMeanSquaredError,
    SparseCategoricalAccuracy, SparseCategoricalCrossentropy, SparseTopKCategoricalAccuracy,
    SquaredHinge, TopKCategoricalAccuracy)}
_NAMES = {"auc": AUC, "precision": Precision, "recall": Recall, "mean": Mean,
          "mse": MeanSquaredError, "MSE": MeanSquaredError,
          "mean_squared_error": MeanSquaredError, "mae": MeanAbsoluteError,
          "MAE": MeanAbsoluteError, "mean_absolute_error": MeanAbsoluteError,
          "root_mean_squared_error": RootMeanSquaredError,
          "categorical_accuracy": CategoricalAccuracy,
          "sparse_categorical_accuracy": SparseCategoricalAccuracy,
          "binary_accuracy": BinaryAccuracy,
          "top_k_categorical_accuracy": TopKCategoricalAccuracy,
          "sparse_top_k_categorical_accuracy": SparseTopKCategoricalAccuracy}
_FUNCTIONS = {"mape": mape, "MAPE": mape, "mean_absolute_percentage_error": mape,
              "msle": msle, "MSLE": msle, "mean_squared_logarithmic_error": msle,
              "binary_crossentropy": binary_crossentropy,
              "categorical_crossentropy": categorical_crossentropy,
              "sparse_categorical_crossentropy": sparse_categorical_crossentropy,
              "hinge": hinge, "squared_hinge": squared_hinge, "kl_divergence": kl_divergence,
              "poisson": poisson, "log_cosh": log_cosh, "logcosh": log_cosh,
              "cosine_similarity": cosine_similarity}
# functions whose class computes them with a kernel
_FUNCTION_CLASSES = {categorical_accuracy: CategoricalAccuracy,
                     sparse_categorical_accuracy: SparseCategoricalAccuracy,
                     binary_accuracy: BinaryAccuracy,
                     top_k_categorical_accuracy: TopKCategoricalAccuracy,
                     sparse_top_k_categorical_accuracy: SparseTopKCategoricalAccuracy,
                     mean_squared_error: MeanSquaredError,
                     mean_absolute_error: MeanAbsoluteError}


def serialize(metric):
    """Keras 3's `keras.metrics.serialize`: a Metric's config dict, a function by name."""
    from ..saving.serialization import serialize_keras_object

    return serialize_keras_object(metric)


def deserialize(config, custom_objects=None):
    """Keras 3's `keras.metrics.deserialize`: the metric a `serialize()` output describes."""
    from ..saving.serialization import deserialize_metric

    return get(deserialize_metric(config, custom_objects))


def get(identifier):
    """A Metric for a name, class, function, Metric or serialized config
    (`keras.metrics.get`); 'accuracy' and 'acc' are resolved by compile, which knows the
    loss and output shape."""
    if isinstance(identifier, Metric):
        return identifier
    if isinstance(identifier, dict):
        if "class_name" not in identifier:
            raise ValueError(f"keras.metrics.get: a config dict needs a 'class_name' (the "
                             f"output of keras.metrics.serialize), got {identifier!r}")
        return deserialize(identifier)
    if isinstance(identifier, str):
        cls = _CLASSES.get(identifier) or _NAMES.get(identifier)
        if cls is not None:
            return cls()
        if identifier in _FUNCTIONS:
            return MeanMetricWrapper(_FUNCTIONS[identifier], name=identifier)
        raise ValueError(f"compile: argument metrics has unknown metric {identifier!r}; kiln "
                         f"knows 'accuracy', 'acc', {sorted(set(_CLASSES) | set(_NAMES))} and "
                         f"{sorted(_FUNCTIONS)}")
    if isinstance(identifier, type) and issubclass(identifier, Metric):
        return identifier()
    if callable(identifier):
        cls = _FUNCTION_CLASSES.get(identifier)
        if cls is not None:
            return cls(name=identifier.__name__)
        return MeanMetricWrapper(identifier, name=getattr(identifier, "__name__", None))
    raise ValueError(f"compile: argument metrics must hold metric names, functions or Metric "
                     f"objects, got {identifier!r}")


__all__ = ["AUC", "Accuracy", "BinaryAccuracy", "BinaryCrossentropy", "CategoricalAccuracy",
           "CategoricalCrossentropy", "CosineSimilarity", "Hinge", "KLDivergence",
           "LogCoshError", "Mean", "MeanAbsoluteError", "MeanAbsolutePercentageError",
           "MeanMetricWrapper", "MeanSquaredError", "MeanSquaredLogarithmicError", "Metric",
           "Poisson", "Precision", "Recall", "RootMeanSquaredError",
           "SparseCategoricalAccuracy", "SparseCategoricalCrossentropy",
           "SparseTopKCategoricalAccuracy", "SquaredHinge", "TopKCategoricalAccuracy",
           "accuracy", "binary_accuracy", "categorical_accuracy", "cosine_similarity",
           "deserialize", "get", "serialize",
           "sparse_categorical_accuracy", "sparse_top_k_categorical_accuracy",
           "top_k_categorical_accuracy"]
