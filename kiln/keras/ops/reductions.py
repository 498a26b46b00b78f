"""keras.ops reductions: sum, mean, max, min, var, std, logsumexp over any axes, keepdims.

Inside a model (never over the batch axis, but for a loss reduced over all of its axes at
once, to one value for the whole batch; such a value, and one value per sample, is a loss
value: only a loss or add_loss may read it, see `loss_value`): a mean or max over the
spatial axes of an image is the engine's global pooling; other sums and means are its
AxisReductionOp (oneDNN reduction, a broadcast back in backward), followed by a ReshapeOp
when Keras drops the axes; var and std are composed from them (mean of the squared deviation
from the mean). max and min over other axes are its AxisReductionOp too, and logsumexp is
composed (the max shift included); prod has no engine op yet and is refused by name.
"""

import numpy as np

from ...graph.symbolic import SymbolicTensor, apply
from ...ops.arg_reduction import ArgReductionOp
from ...ops.axis_reduction import AxisReductionOp
from ...ops.cumulative_sum import CumulativeSumOp
from ...ops.global_pooling import GlobalPooling2DOp
from ...ops.reshape import ReshapeOp
from .core import (
    in_traced_loss,
    keras_array,
    keras_axes_to_logical,
    normalize_axes,
    not_in_model,
    op_name,
    result,
)


def loss_value(tensor):
    """`tensor` (a reduction to one value for the batch, or per sample as (None, 1, ...)
    standing for (None,)) marked as a loss value: what is computed from it is one too, and a
    layer or a model output refuses it (keras/layers/layer_losses.py), so its stand-in shape
    never reaches a layer. Inside a traced loss it is what the loss returns; elsewhere (an
    add_loss or compute_loss term) it is reshaped to (None, 1), so that two such values of
    different ranks (a reconstruction summed over an image, a KL term) add up as in Keras."""
    if len(tensor.dims) > 2 and not in_traced_loss():
        tensor = apply(ReshapeOp(op_name("reshape"), (1,), tensor.data_format), tensor)
    tensor.loss_value = True
    return tensor


def _symbolic(name, mode, x, axis, keepdims):
    """`mode` ('sum', 'avg', 'max' or 'min') of symbolic `x` over Keras `axis`."""
    axes = normalize_axes(axis, len(x.shape), name)
    logical = keras_axes_to_logical(x)  # refuses flattened tensors
    if 0 in axes:
        if len(axes) == len(x.shape) and (mode in ("sum", "avg") or in_traced_loss()):
            # a loss reduced over the whole batch: one value, dims (1, ..., 1), which the
            # loss head weights as Keras does a scalar loss (kiln/plan/traced_loss.py), or
            # add_loss sums (kiln/plan/added_losses.py)
            return loss_value(apply(AxisReductionOp(
                op_name(name), "mean" if mode == "avg" else mode, range(len(x.dims)),
                over_batch=True), x))
        not_in_model(name, f"over the batch axis (axes {axes} of {x.shape}; a loss may "
                           "reduce over every axis at once)")
    if len(x.dims) == 4 and sorted(logical[a] for a in axes) == [2, 3] and mode in ("avg",
                                                                                     "max"):
        return apply(GlobalPooling2DOp(op_name(name), mode, keepdims=bool(keepdims)), x)
    reduced = apply(AxisReductionOp(op_name(name), "mean" if mode == "avg" else mode,
                                    [logical[a] for a in axes]), x)
    if keepdims:
        return reduced
    target = [d for i, d in enumerate(x.shape) if i not in axes][1:]
    if not target:
        return loss_value(reduced)  # one value per sample: (None, 1, ...) stands for (None,)
    if not 1 <= len(target) <= 3:
        not_in_model(name, f"over axes {axes} of {x.shape} without keepdims (a result of "
                           f"rank {len(target) + 1}; use keepdims=True)")
    return apply(ReshapeOp(op_name(name), target, reduced.data_format), reduced)


def _variance(name, x, axis, keepdims):
    """var (std) of symbolic x: the mean of the squared deviation from the mean (its sqrt)."""
    from .elementwise import sqrt, square, subtract

    deviation = subtract(x, _symbolic(name, "avg", x, axis, True))
    variance = _symbolic(name, "avg", square(deviation), axis, keepdims)
    return sqrt(variance) if name == "std" else variance


def _logsumexp_symbolic(x, axis, keepdims):
    """log(sum(exp(x - max))) + max over `axis` (the max shift keeps exp finite)."""
    from .elementwise import add, exp, log, subtract

    peak = _symbolic("logsumexp", "max", x, axis, True)
    total = _symbolic("logsumexp", "sum", exp(subtract(x, peak)), axis, True)
    out = add(log(total), peak)
    if keepdims:
        return out
    axes = normalize_axes(axis, len(x.shape), "logsumexp")
    target = [d for i, d in enumerate(x.shape) if i not in axes][1:]
    if not 1 <= len(target) <= 3:
        not_in_model("logsumexp", f"over axes {axes} of {x.shape} without keepdims (a "
                                  f"result of rank {len(target) + 1}; use keepdims=True)")
    return apply(ReshapeOp(op_name("logsumexp"), target, out.data_format), out)


def _reduction(name, numpy_function, mode=None, float_result=False):
    def run(x, axis=None, keepdims=False):
        if isinstance(x, SymbolicTensor):
            if name in ("var", "std"):
                return _variance(name, x, axis, keepdims)
            if name == "logsumexp":
                return _logsumexp_symbolic(x, axis, keepdims)
            if mode is None:
                not_in_model(name)
            return _symbolic(name, mode, x, axis, keepdims)
        array = keras_array(x)
        axes = None if axis is None else normalize_axes(axis, array.ndim, name)
        return result(numpy_function(array, axis=axes, keepdims=keepdims), float_result)

    run.__name__ = name
    return run


sum = _reduction("sum", np.sum, "sum")  # noqa: A001 (keras.ops.sum)
mean = _reduction("mean", np.mean, "avg", float_result=True)
max = _reduction("max", np.max, "max")  # noqa: A001 (keras.ops.max)
min = _reduction("min", np.min, "min")  # noqa: A001 (keras.ops.min)
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
            return _arg_symbolic(name, x, axis, keepdims)
        out = numpy_function(keras_array(x), axis=axis, keepdims=keepdims)
        return np.asarray(out).astype(np.int32)

    run.__name__ = name
    return run


def _arg_symbolic(name, x, axis, keepdims):
    """The index along one non-batch axis of a rank-2 or rank-3 tensor, as float32."""
    if axis is None:
        not_in_model(name, "axis=None (over the batch too)")
    (axis,) = normalize_axes(axis, len(x.shape), name)
    if axis == 0 or len(x.shape) > 3 or x.flattened:
        not_in_model(name, f"axis {axis} of a tensor of shape {x.shape} (a non-batch axis of "
                           "a rank-2 or rank-3 tensor)")
    out = apply(ArgReductionOp(op_name(name), name, axis), x)
    if keepdims:
        return out
    kept = [d for i, d in enumerate(out.shape) if i != axis]
    if len(kept) < 2:
        not_in_model(name, f"keepdims=False on shape {x.shape} (a result of one value per "
                           "sample; use keepdims=True)")
    return apply(ReshapeOp(op_name(name), tuple(kept[1:]), x.data_format, False), out)


argmax = _arg("argmax", np.argmax)
argmin = _arg("argmin", np.argmin)


def cumsum(x, axis=None, dtype=None):
    """The running sum along `axis` (a non-batch axis inside a model: CumulativeSumOp)."""
    if isinstance(x, SymbolicTensor):
        if dtype not in (None, "float32"):
            not_in_model("cumsum", f"dtype {dtype!r} (tensors in a model are float32)")
        if axis is None:
            not_in_model("cumsum", "axis=None (it flattens the batch in with the rest)")
        (axis,) = normalize_axes(axis, len(x.shape), "cumsum")
        if axis == 0:
            not_in_model("cumsum", "along the batch axis")
        keras_axes_to_logical(x)  # refuses flattened tensors
        return apply(CumulativeSumOp(op_name("cumsum"), axis), x)
    out = np.cumsum(keras_array(x), axis=axis)
    return result(out.astype(dtype) if dtype is not None else out)
