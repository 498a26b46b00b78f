"""keras.ops functions that move values around: reshape, transpose, expand_dims, squeeze,
concatenate, cast, ones_like / zeros_like, one_hot, convert_to_tensor (slicing, split and
stack: slicing.py).

Inside a model the batch axis stays where it is: reshape / expand_dims / squeeze are the
engine's ReshapeOp, transpose its PermuteOp, concatenate its ConcatenateOp (on the logical axis of
the Keras axis).
"""

import numpy as np

from ...graph.symbolic import SymbolicTensor, apply
from ...ops.concatenate import ConcatenateOp
from ...ops.permute import PermuteOp
from ...ops.reshape import ReshapeOp
from ...ops.unary import UnaryOp
from .core import (
    is_symbolic,
    keras_array,
    keras_axes_to_logical,
    normalize_axes,
    not_in_model,
    op_name,
    result,
    where,
)


def _reshape_symbolic(name, x, shape):
    shape = tuple(shape)
    if not shape or shape[0] not in (-1, None, x.shape[0]):
        not_in_model(name, f"a new shape {shape} that changes the batch axis")
    target = tuple(-1 if d is None else int(d) for d in shape[1:])
    if x.flattened and len(target) != 1:
        keras_axes_to_logical(x)  # refuses a flattened tensor with the usual message
    if not 1 <= len(target) <= 3:
        not_in_model(name, f"a result of rank {len(target) + 1} (ranks 2 to 4 are planned)")
    return apply(ReshapeOp(op_name(name), target, x.data_format, x.flattened), x)


def reshape(x, newshape):
    if isinstance(x, SymbolicTensor):
        return _reshape_symbolic("reshape", x, newshape)
    return result(np.reshape(keras_array(x), newshape))


def transpose(x, axes=None):
    if isinstance(x, SymbolicTensor):
        if axes is None or int(axes[0]) != 0:
            not_in_model("transpose", "a permutation that moves the batch axis")
        keras_axes_to_logical(x)
        return apply(PermuteOp(op_name("transpose"), [int(a) for a in axes[1:]],
                               x.data_format), x)
    return result(np.transpose(keras_array(x), axes))


def expand_dims(x, axis):
    if isinstance(x, SymbolicTensor):
        shape = list(x.shape)
        position = axis if axis >= 0 else len(shape) + 1 + axis
        if position == 0:
            not_in_model("expand_dims", "a new axis before the batch")
        shape.insert(position, 1)
        return _reshape_symbolic("expand_dims", x, shape)
    return result(np.expand_dims(keras_array(x), axis))


def squeeze(x, axis=None):
    if isinstance(x, SymbolicTensor):
        shape = list(x.shape)
        if axis is None:
            axes = tuple(i for i, d in enumerate(shape) if d == 1 and i > 0)
        else:
            axes = normalize_axes(axis, len(shape), "squeeze")
        if 0 in axes or any(shape[a] != 1 for a in axes):
            raise ValueError(f"{where()}: keras.ops.squeeze cannot remove axes {axes} of "
                             f"shape {tuple(shape)} (not of size 1, or the batch)")
        return _reshape_symbolic("squeeze", x, [d for i, d in enumerate(shape)
                                                if i not in axes])
    return result(np.squeeze(keras_array(x), axis))


def concatenate(xs, axis=0):
    if is_symbolic(*xs):
        if not all(isinstance(x, SymbolicTensor) for x in xs):
            not_in_model("concatenate", "a constant array among the tensors")
        rank = len(xs[0].shape)
        (keras_axis,) = normalize_axes(axis, rank, "concatenate")
        if keras_axis == 0:
            not_in_model("concatenate", "along the batch axis")
        logical = keras_axes_to_logical(xs[0])[keras_axis]
        return apply(ConcatenateOp(op_name("concatenate"), logical), list(xs))
    return result(np.concatenate([keras_array(x) for x in xs], axis=axis))


def cast(x, dtype):
    name = getattr(dtype, "name", dtype)
    if isinstance(x, SymbolicTensor):
        if name != "float32":
            not_in_model("cast", f"to {name!r} (tensors in a model are float32)")
        return x
    return np.asarray(keras_array(x)).astype(name)


def convert_to_tensor(x, dtype=None, sparse=None, ragged=None):
    if isinstance(x, SymbolicTensor):
        return cast(x, dtype) if dtype is not None else x
    array = keras_array(x)
    return array.astype(getattr(dtype, "name", dtype)) if dtype is not None else array


def _like(name, value):
    def run(x, dtype=None):
        if isinstance(x, SymbolicTensor):
            if dtype not in (None, "float32"):
                not_in_model(name, f"dtype {dtype!r} (tensors in a model are float32)")
            return apply(UnaryOp(op_name(name), "linear", 0.0, value), x)
        array = keras_array(x)
        return np.full_like(array, value, dtype=dtype or array.dtype)

    run.__name__ = name
    return run


ones_like = _like("ones_like", 1.0)
zeros_like = _like("zeros_like", 0.0)


def shape(x):
    return tuple(x.shape)


def ones(shape, dtype=None):
    return np.ones(shape, dtype=dtype or np.float32)


def zeros(shape, dtype=None):
    return np.zeros(shape, dtype=dtype or np.float32)


def one_hot(x, num_classes, axis=-1, dtype=None, sparse=False):
    if isinstance(x, SymbolicTensor):
        not_in_model("one_hot")
    indices = keras_array(x).astype(np.int64)
    out = (indices[..., None] == np.arange(num_classes)).astype(dtype or np.float32)
    return np.moveaxis(out, -1, axis) if axis != -1 else out
