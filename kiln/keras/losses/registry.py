"""Which step kernel computes which Keras loss, and the names compile() accepts.

Names follow Keras 3 (`keras.losses.get`) plus the Keras 2 spellings the classic scripts use
(`logcosh`, `kullback_leibler_divergence`, `cosine_proximity`, `huber_loss`).
"""

from ...ops.losses import (
    BinaryCrossentropyHead,
    CategoricalCrossentropyHead,
    CosineSimilarityHead,
    ElementwiseLossHead,
)
from .. import backend
from . import functions
from . import loss as loss_module

ELEMENTWISE = {
    functions.mean_squared_error: "mean_squared_error",
    functions.mean_absolute_error: "mean_absolute_error",
    functions.mean_absolute_percentage_error: "mean_absolute_percentage_error",
    functions.mean_squared_logarithmic_error: "mean_squared_logarithmic_error",
    functions.huber: "huber",
    functions.log_cosh: "log_cosh",
    functions.hinge: "hinge",
    functions.squared_hinge: "squared_hinge",
    functions.kl_divergence: "kl_divergence",
    functions.poisson: "poisson",
}

# name -> function; classes by their class name (as keras.losses.get)
FUNCTIONS = {
    "categorical_crossentropy": functions.categorical_crossentropy,
    "sparse_categorical_crossentropy": functions.sparse_categorical_crossentropy,
    "binary_crossentropy": functions.binary_crossentropy,
    "mean_squared_error": functions.mean_squared_error, "mse": functions.mean_squared_error,
    "MSE": functions.mean_squared_error,
    "mean_absolute_error": functions.mean_absolute_error, "mae": functions.mean_absolute_error,
    "MAE": functions.mean_absolute_error,
    "mean_absolute_percentage_error": functions.mean_absolute_percentage_error,
    "mape": functions.mean_absolute_percentage_error,
    "MAPE": functions.mean_absolute_percentage_error,
    "mean_squared_logarithmic_error": functions.mean_squared_logarithmic_error,
    "msle": functions.mean_squared_logarithmic_error,
    "MSLE": functions.mean_squared_logarithmic_error,
    "huber": functions.huber, "huber_loss": functions.huber,
    "log_cosh": functions.log_cosh, "logcosh": functions.log_cosh,
    "hinge": functions.hinge, "squared_hinge": functions.squared_hinge,
    "kl_divergence": functions.kl_divergence, "kld": functions.kl_divergence,
    "KLD": functions.kl_divergence,
    "kullback_leibler_divergence": functions.kl_divergence,
    "poisson": functions.poisson,
    "cosine_similarity": functions.cosine_similarity,
    "cosine_proximity": functions.cosine_similarity,
}
CLASSES = {cls.__name__: cls for cls in (
    loss_module.MeanSquaredError, loss_module.MeanAbsoluteError,
    loss_module.MeanAbsolutePercentageError, loss_module.MeanSquaredLogarithmicError,
    loss_module.Huber, loss_module.LogCosh, loss_module.Hinge, loss_module.SquaredHinge,
    loss_module.KLDivergence, loss_module.Poisson, loss_module.CosineSimilarity,
    loss_module.BinaryCrossentropy, loss_module.CategoricalCrossentropy,
    loss_module.SparseCategoricalCrossentropy)}


def head_for(fn, name, kwargs):
    """The ops.losses head computing `fn(y_true, y_pred, **kwargs)` (None if there is none)."""
    eps = backend.epsilon()
    if fn is functions.categorical_crossentropy:
        return CategoricalCrossentropyHead(name, kwargs.get("from_logits", False),
                                           kwargs.get("label_smoothing", 0.0), epsilon=eps,
                                           axis=kwargs.get("axis", -1))
    if fn is functions.sparse_categorical_crossentropy:
        if kwargs.get("ignore_class") is not None:
            raise ValueError(f"loss '{name}': argument ignore_class is not supported by kiln "
                             f"yet (must be None), got {kwargs['ignore_class']!r}")
        return CategoricalCrossentropyHead(name, kwargs.get("from_logits", False), sparse=True,
                                           epsilon=eps, axis=kwargs.get("axis", -1))
    if fn is functions.binary_crossentropy:
        return BinaryCrossentropyHead(name, kwargs.get("from_logits", False),
                                      kwargs.get("label_smoothing", 0.0), epsilon=eps)
    if fn is functions.cosine_similarity:
        return CosineSimilarityHead(name, eps)
    if fn in ELEMENTWISE:
        return ElementwiseLossHead(name, ELEMENTWISE[fn], kwargs.get("delta", 1.0), eps)
    return None


def serialize(loss):
    """Keras 3's `keras.losses.serialize`: a Loss object's config dict, a function's
    reference by name, a name as it is."""
    from ..saving.serialization import serialize_keras_object

    return serialize_keras_object(loss)


def deserialize(config, custom_objects=None):
    """Keras 3's `keras.losses.deserialize`: the loss a `serialize()` output describes."""
    from ..saving.serialization import deserialize_loss

    loss = deserialize_loss(config, custom_objects)
    return get(loss) if not isinstance(loss, dict) else loss


def get(identifier):
    """A Loss object for a name, function, class, instance or serialized config
    (`keras.losses.get`); None stays None (an output without a loss)."""
    if identifier is None or isinstance(identifier, loss_module.Loss):
        return identifier
    if isinstance(identifier, dict):
        if "class_name" not in identifier:
            raise ValueError(f"keras.losses.get: a config dict needs a 'class_name' (the "
                             f"output of keras.losses.serialize), got {identifier!r}")
        return deserialize(identifier)
    if isinstance(identifier, str):
        if identifier in CLASSES:
            return CLASSES[identifier]()
        if identifier in FUNCTIONS:
            return loss_module.LossFunctionWrapper(FUNCTIONS[identifier], name=identifier)
        raise ValueError(f"compile: argument loss must be a Keras loss name, function or "
                         f"object, got {identifier!r}; kiln knows {sorted(FUNCTIONS)}")
    if isinstance(identifier, type) and issubclass(identifier, loss_module.Loss):
        raise ValueError(f"compile: argument loss must be a loss object, got the class "
                         f"{identifier.__name__} (write {identifier.__name__}())")
    if callable(identifier):
        return loss_module.LossFunctionWrapper(identifier,
                                               name=getattr(identifier, "__name__", None))
    raise ValueError(f"compile: argument loss must be a Keras loss name, function or object, "
                     f"got {identifier!r}")
