"""keras.ops reductions: sum, mean, max, min, var, std, logsumexp over any axes, keepdims.

Inside a model, a mean or max over the spatial axes of an image tensor (Keras axes (1, 2) of
channels_last, (2, 3) of channels_first) is the engine's global pooling; other reductions
have no engine op yet and are refused by name.
"""

import numpy as np

from ...graph.symbolic import SymbolicTensor, apply
from ...ops.global_pooling import GlobalPooling2D
from .core import keras_array, keras_axes_to_logical, normalize_axes, not_in_model, op_name, result


def _spatial_pooling(name, mode, x, axis, keepdims):
    axes = normalize_axes(axis, len(x.shape), name)
    if len(x.dims) == 4 and not x.flattened:
        logical = keras_axes_to_logical(x)
        if sorted(logical[a] for a in axes) == [2, 3] and not keepdims:
            return apply(GlobalPooling2D(op_name(name), mode), x)
        if sorted(logical[a] for a in axes) == [2, 3]:
            return apply(GlobalPooling2D(op_name(name), mode, keepdims=True), x)
    not_in_model(name, f"over axes {axes} of {x.shape}; only a mean or max over the spatial "
                       "axes of an image is planned")


def _reduction(name, numpy_function, pooling=None, float_result=False):
    def run(x, axis=None, keepdims=False):
        if isinstance(x, SymbolicTensor):
            if pooling is None:
                not_in_model(name)
            return _spatial_pooling(name, pooling, x, axis, keepdims)
        array = keras_array(x)
        axes = None if axis is None else normalize_axes(axis, array.ndim, name)
        return result(numpy_function(array, axis=axes, keepdims=keepdims), float_result)

    run.__name__ = name
    return run


sum = _reduction("sum", np.sum)  # noqa: A001 (keras.ops.sum)
mean = _reduction("mean", np.mean, "avg", float_result=True)
max = _reduction("max", np.max, "max")  # noqa: A001 (keras.ops.max)
min = _reduction("min", np.min)  # noqa: A001 (keras.ops.min)
var = _reduction("var", np.var, float_result=True)
std = _reduction("std", np.std, float_result=True)
prod = _reduction("prod", np.prod)
amax, amin = max, min


def _logsumexp(x, axis=None, keepdims=False):
    x = np.asarray(x, np.float32)
    peak = np.max(x, axis=axis, keepdims=True)
    peak = np.where(np.isfinite(peak), peak, 0)
    out = np.log(np.sum(np.exp(x - peak), axis=axis, keepdims=True)) + peak
    return out if keepdims else np.squeeze(out, axis=axis)


logsumexp = _reduction("logsumexp", _logsumexp, float_result=True)


def _arg(name, numpy_function):
    def run(x, axis=None, keepdims=False):
        if isinstance(x, SymbolicTensor):
            not_in_model(name)
        out = numpy_function(keras_array(x), axis=axis, keepdims=keepdims)
        return np.asarray(out).astype(np.int32)

    run.__name__ = name
    return run


argmax = _arg("argmax", np.argmax)
argmin = _arg("argmin", np.argmin)
