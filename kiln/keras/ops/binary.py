"""Two-operand element-wise ops inside a model: tensor op tensor, tensor op weight.

Two tensors of the same shape run as the engine's merge ops (oneDNN binary / sum). Shapes
that differ but broadcast, and a tensor with a weight from `add_weight` (the weight becomes
the op's parameter, so it trains), run as the engine's BroadcastBinaryOp: its operand's logical
dims carry 1s on the broadcast axes, e.g. a (C,) weight on a channels_last (N, H, W, C)
tensor is logical (1, C, 1, 1) in the layout whose bytes are the Keras value's.
"""

import numpy as np

from ...binding import constants as dnnl
from ...graph.symbolic import SymbolicTensor, apply
from ...ops import merge
from ...ops.tensor import CHANNELS_LAST, logical_dims
from ..layers.custom_weights import bind_dims, plain_tag
from ..layers.weight import Weight
from .core import keras_axes_to_logical, not_in_model, op_name, where

MERGES = {"add": merge.AddOp, "subtract": merge.SubtractOp, "multiply": merge.MultiplyOp,
          "maximum": merge.MaximumOp, "minimum": merge.MinimumOp}
COMMUTATIVE = ("add", "multiply", "maximum", "minimum")


def broadcast_shape(function, shape1, shape2):
    """numpy's broadcast of two Keras shapes (batch None), or an error naming both."""
    rank = max(len(shape1), len(shape2))
    a = (1,) * (rank - len(shape1)) + tuple(shape1)
    b = (1,) * (rank - len(shape2)) + tuple(shape2)
    out = []
    for x, y in zip(a, b, strict=True):
        if x == y or y == 1:
            out.append(x)
        elif x == 1:
            out.append(y)
        else:
            raise ValueError(f"{where()}: keras.ops.{function}: shapes {tuple(shape1)} and "
                             f"{tuple(shape2)} do not broadcast")
    return tuple(out)


def _broadcast_op():
    try:
        from ...ops.broadcast import BroadcastBinaryOp
    except ImportError:
        return None
    return BroadcastBinaryOp


def binary(function, x1, x2):
    """`function(x1, x2)` with at least one SymbolicTensor among them."""
    if isinstance(x1, SymbolicTensor) and isinstance(x2, SymbolicTensor):
        return _two_tensors(function, x1, x2)
    if isinstance(x1, SymbolicTensor) and isinstance(x2, Weight):
        return _with_weight(function, x1, x2)
    if isinstance(x2, SymbolicTensor) and isinstance(x1, Weight):
        if function in COMMUTATIVE:
            return _with_weight(function, x2, x1)
        if function == "subtract":  # w - x = (-x) + w
            from .elementwise import negative

            return _with_weight("add", negative(x2), x1)
        not_in_model(function, "a weight divided by a tensor")
    if isinstance(x1, SymbolicTensor) and _is_array(x2):
        return _with_constant(function, x1, x2, constant_first=False)
    if isinstance(x2, SymbolicTensor) and _is_array(x1):
        return _with_constant(function, x2, x1, constant_first=True)
    not_in_model(function, f"operands of types {type(x1).__name__} and {type(x2).__name__}")


def _is_array(value):
    """A numpy array or a (nested) list or tuple of numbers: a constant of the plan."""
    if isinstance(value, (SymbolicTensor, Weight)):
        return False
    try:
        array = np.asarray(value)
    except (TypeError, ValueError):
        return False
    return array.dtype.kind in "biuf"


def _with_constant(function, tensor, value, constant_first):
    """`tensor (function) value` (or `value (function) tensor`) with a constant array the
    plan holds (as JAX bakes a numpy constant into the traced function): no gradient."""
    array = np.asarray(value, dtype=np.float32)
    dims, tag = operand_dims(function, tensor, array.shape)
    BroadcastBinary = _broadcast_op()
    if BroadcastBinary is None:
        not_in_model(function, "a constant array operand needs the broadcasting binary op")
    return apply(BroadcastBinary(op_name(function), function, constant_array=(array, dims, tag),
                                 constant_first=constant_first), tensor)


def _two_tensors(function, x1, x2):
    shape = broadcast_shape(function, x1.shape[1:], x2.shape[1:])
    if x1.dims == x2.dims and x1.flattened == x2.flattened and function in MERGES:
        return apply(MERGES[function](op_name(function)), [x1, x2])
    BroadcastBinary = _broadcast_op()
    if BroadcastBinary is None or len(x1.dims) != len(x2.dims):
        not_in_model(function, f"broadcasting {x1.shape} with {x2.shape}")
    for tensor in (x1, x2):
        keras_axes_to_logical(tensor)  # refuses flattened tensors
    del shape
    return apply(BroadcastBinary(op_name(function), function), [x1, x2])


def operand_dims(function, tensor, weight_shape):
    """(logical dims, layout tag) reading a weight of Keras shape `weight_shape` against
    `tensor`, numpy-broadcast from the right (the batch axis always 1)."""
    rank = len(tensor.shape)
    keras_axes_to_logical(tensor)  # refuses flattened tensors
    shape = tuple(weight_shape)
    if len(shape) == rank and shape[0] == 1:
        shape = shape[1:]
    if len(shape) > rank - 1:
        raise ValueError(f"{where()}: a weight of shape {tuple(weight_shape)} cannot broadcast "
                         f"against a tensor of shape {tensor.shape} without changing its batch")
    full = (1,) * (rank - len(shape)) + shape
    broadcast_shape(function, tensor.shape[1:], full[1:])
    dims = logical_dims(full, tensor.data_format)
    if rank == 4:
        tag = dnnl.acdb if tensor.data_format == CHANNELS_LAST else dnnl.abcd
    else:
        tag = plain_tag(rank)
    return dims, tag


def _with_weight(function, tensor, weight):
    dims, tag = operand_dims(function, tensor, weight.shape)
    BroadcastBinary = _broadcast_op()
    if BroadcastBinary is None:
        not_in_model(function, "a weight operand needs the broadcasting binary op")
    bind_dims(weight, dims, tag, where())
    owner, short = weight.path.rsplit("/", 1)
    return apply(BroadcastBinary(owner, function, (short, dims, tag)), tensor)
