"""Loss objects (`keras.losses.Loss`, `LossFunctionWrapper` and the built-in classes).

A loss object is what compile() receives: it knows its Keras name and arguments, computes its
value on numpy arrays when called (for users and tests), and names the step kernel that
computes the same value and gradient in a plan (`engine_head`). A loss written by a user (a
function or a subclass with its own `call`, with keras.ops) is traced into ops of the step
(traced.py).
"""

import numpy as np

from . import functions

REDUCTIONS = ("sum_over_batch_size", "sum", None, "none", "mean", "mean_with_sample_weight")


def _to_snake(name):
    out = []
    for index, char in enumerate(name):
        if char.isupper() and index and not name[index - 1].isupper():
            out.append("_")
        out.append(char.lower())
    return "".join(out)


def reduce_weighted_values(values, sample_weight=None, reduction="sum_over_batch_size"):
    """Keras' reduce_weighted_values on numpy arrays."""
    values = np.asarray(values, dtype=np.float64)
    if sample_weight is not None:
        weights = np.asarray(sample_weight, dtype=np.float64)
        if weights.ndim == values.ndim + 1 and weights.shape[-1] == 1:
            weights = weights[..., 0]
        values = values * weights
    if reduction in (None, "none") or values.shape in ((), (0,)):
        return values
    loss = np.sum(values)
    if reduction == "mean_with_sample_weight" and sample_weight is not None:
        divisor = float(np.sum(sample_weight))
    elif reduction == "sum":
        return loss
    else:
        divisor = float(values.size)
    return loss / divisor if divisor else 0.0


class Loss:
    """Base class of losses (`keras.losses.Loss`): subclass and define `call(y_true, y_pred)`.

    Args: name, reduction (one of REDUCTIONS), dtype.
    """

    def __init__(self, name=None, reduction="sum_over_batch_size", dtype=None):
        if reduction not in REDUCTIONS:
            raise ValueError(f"{type(self).__name__}: argument reduction must be one of "
                             f"{REDUCTIONS}, got {reduction!r}")
        self.name = name or _to_snake(type(self).__name__)
        self.reduction = reduction
        self.dtype = dtype or "float32"

    def __call__(self, y_true, y_pred, sample_weight=None):
        return reduce_weighted_values(self.call(y_true, y_pred), sample_weight, self.reduction)

    def call(self, y_true, y_pred):
        raise NotImplementedError(f"{type(self).__name__}: a Loss subclass must define call()")

    def get_config(self):
        return {"name": self.name, "reduction": self.reduction}

    @classmethod
    def from_config(cls, config):
        return cls(**config)

    def engine_head(self):
        """The step head computing this loss: a subclass's own `call`, traced (keras.ops)."""
        if type(self).call is Loss.call:
            return None
        from .traced import traced_head

        return traced_head(self.call, self.name)


class LossFunctionWrapper(Loss):
    """A loss function with fixed keyword arguments as a Loss object."""

    def __init__(self, fn, reduction="sum_over_batch_size", name=None, dtype=None, **kwargs):
        super().__init__(name=name or getattr(fn, "__name__", None), reduction=reduction,
                         dtype=dtype)
        self.fn = fn
        self._fn_kwargs = kwargs

    def call(self, y_true, y_pred):
        return self.fn(y_true, y_pred, **self._fn_kwargs)

    def get_config(self):
        return {**super().get_config(), **self._fn_kwargs}

    def engine_head(self):
        """A kernel of kiln's for Keras's own functions; any other is traced (keras.ops)."""
        from .registry import head_for
        from .traced import traced_head

        return (head_for(self.fn, self.name, self._fn_kwargs)
                or traced_head(self.fn, self.name, self._fn_kwargs))


def _wrapper(fn, default_name, **defaults):
    """A built-in Loss class over `fn` whose constructor takes `defaults` as keywords."""

    def __init__(self, *args, reduction="sum_over_batch_size", name=default_name, dtype=None,
                 **kwargs):
        values = dict(defaults)
        for key, value in zip(defaults, args, strict=False):
            values[key] = value
        unknown = set(kwargs) - set(defaults)
        if unknown:
            raise TypeError(f"{type(self).__name__}: unexpected keyword argument(s) "
                            f"{sorted(unknown)}")
        values.update(kwargs)
        LossFunctionWrapper.__init__(self, fn, reduction=reduction, name=name, dtype=dtype,
                                     **values)
        for key, value in values.items():
            setattr(self, key, value)

    return {"__init__": __init__}


def _loss_class(class_name, fn, default_name, **defaults):
    return type(class_name, (LossFunctionWrapper,), _wrapper(fn, default_name, **defaults))


MeanSquaredError = _loss_class("MeanSquaredError", functions.mean_squared_error,
                               "mean_squared_error")
MeanAbsoluteError = _loss_class("MeanAbsoluteError", functions.mean_absolute_error,
                                "mean_absolute_error")
MeanAbsolutePercentageError = _loss_class(
    "MeanAbsolutePercentageError", functions.mean_absolute_percentage_error,
    "mean_absolute_percentage_error")
MeanSquaredLogarithmicError = _loss_class(
    "MeanSquaredLogarithmicError", functions.mean_squared_logarithmic_error,
    "mean_squared_logarithmic_error")
Huber = _loss_class("Huber", functions.huber, "huber_loss", delta=1.0)
LogCosh = _loss_class("LogCosh", functions.log_cosh, "log_cosh")
Hinge = _loss_class("Hinge", functions.hinge, "hinge")
SquaredHinge = _loss_class("SquaredHinge", functions.squared_hinge, "squared_hinge")
KLDivergence = _loss_class("KLDivergence", functions.kl_divergence, "kl_divergence")
Poisson = _loss_class("Poisson", functions.poisson, "poisson")
CosineSimilarity = _loss_class("CosineSimilarity", functions.cosine_similarity,
                               "cosine_similarity", axis=-1)
BinaryCrossentropy = _loss_class("BinaryCrossentropy", functions.binary_crossentropy,
                                 "binary_crossentropy", from_logits=False,
                                 label_smoothing=0.0, axis=-1)
CategoricalCrossentropy = _loss_class(
    "CategoricalCrossentropy", functions.categorical_crossentropy, "categorical_crossentropy",
    from_logits=False, label_smoothing=0.0, axis=-1)
SparseCategoricalCrossentropy = _loss_class(
    "SparseCategoricalCrossentropy", functions.sparse_categorical_crossentropy,
    "sparse_categorical_crossentropy", from_logits=False, ignore_class=None, axis=-1)

