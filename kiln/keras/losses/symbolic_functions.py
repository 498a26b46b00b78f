"""The loss functions on symbolic tensors: `keras.losses.binary_crossentropy(inputs, outputs)`
written between layers (Keras 2 scripts build an `add_loss` term from it) or inside a loss or
call(), composed of keras.ops so they become ops of the compiled step, with Keras 3's
formulas, clips and epsilons (functions.py computes the same on numpy arrays)."""

import functools

from ...graph.symbolic import SymbolicTensor
from .. import backend


def on_tensors(function):
    """`function` (a numpy loss of functions.py) calling its keras.ops version, the
    function of this module with its name, when an argument is a symbolic tensor."""

    @functools.wraps(function)
    def dispatch(*args, **kwargs):
        if any(isinstance(a, SymbolicTensor) for a in (*args, *kwargs.values())):
            return SYMBOLIC[function.__name__](*args, **kwargs)
        return function(*args, **kwargs)

    return dispatch


def binary_crossentropy(y_true, y_pred, from_logits=False, label_smoothing=0.0, axis=-1):
    from .. import ops

    if from_logits:
        raise NotImplementedError("keras.losses.binary_crossentropy: from_logits=True on "
                                  "symbolic tensors is not supported yet; apply a sigmoid "
                                  "and pass from_logits=False")
    if label_smoothing:
        y_true = y_true * (1.0 - label_smoothing) + 0.5 * label_smoothing
    eps = backend.epsilon()
    p = ops.clip(y_pred, eps, 1.0 - eps)
    values = -(y_true * ops.log(p) + (1.0 - y_true) * ops.log(1.0 - p))
    return ops.mean(values, axis=axis)


def mean_squared_error(y_true, y_pred):
    from .. import ops

    return ops.mean(ops.square(y_true - y_pred), axis=-1)


def mean_absolute_error(y_true, y_pred):
    from .. import ops

    return ops.mean(ops.abs(y_true - y_pred), axis=-1)


SYMBOLIC = {function.__name__: function for function in (
    binary_crossentropy, mean_squared_error, mean_absolute_error)}
