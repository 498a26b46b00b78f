"""Argument checks shared by the keras.random functions, and where a draw runs: eagerly (a
numpy array) or, inside a layer's call(), as a RandomDrawOp of the model being traced.

Inside call() the drawn tensor's first axis is the batch, taken from the layer's input: the
shape is `(ops.shape(x)[0], ...)`, whose first entry is None (or the fixed batch size of an
Input made with one). A draw without a batch axis is refused there: the engine's tensors
are batch-first.
"""

import numpy as np

from ...graph.symbolic import SymbolicTensor, apply, tracing
from ...ops.random_distributions import DistributionDrawOp
from ...ops.random_draw import RandomDrawOp
from ...ops.tensor import CHANNELS_LAST
from ..layers.layer_tracing import call_inputs
from ..ops.core import op_name, where
from .seed_generator import is_int, planned_state

FLOAT_DTYPES = (None, "float16", "bfloat16", "float32", "float64")
INT_DTYPES = ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64")


def in_model(function):
    """Whether a layer's call() is being traced (not its build()). Elsewhere in a traced model
    (a loss written with keras.ops) an eager draw would be a constant of the plan: refused."""
    if tracing and not call_inputs:
        raise NotImplementedError(f"keras.random.{function} in {where()}: random draws are "
                                  "supported inside a layer's call(), not here yet")
    return bool(call_inputs) and call_inputs[-1] is not None


def dtype_name(dtype):
    return getattr(dtype, "name", dtype)


def checked_float_dtype(dtype, function):
    name = dtype_name(dtype)
    if name not in FLOAT_DTYPES:
        raise ValueError(f"keras.random.{function}: argument dtype must be a floating point "
                         f"dtype, got {dtype!r}")
    return name or "float32"


def checked_shape(shape, function, batch_axis=False):
    """`shape` as a tuple of ints >= 0 (an int is a 1D shape); `batch_axis` lets the first
    entry be None (the batch, inside a model)."""
    items = (shape,) if is_int(shape) else shape
    bad = not isinstance(items, (tuple, list))
    if not bad:
        for axis, size in enumerate(items):
            if size is None and axis == 0 and batch_axis:
                continue
            if not is_int(size) or size < 0:
                bad = True
    if bad:
        expected = "ints >= 0" + (" (None for the batch, first)" if batch_axis else "")
        raise ValueError(f"keras.random.{function}: argument shape must be a tuple of "
                         f"{expected}, got {shape!r}")
    return tuple(None if size is None else int(size) for size in items)


def checked_number(value, function, argument):
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        if isinstance(value, SymbolicTensor):
            raise NotImplementedError(f"keras.random.{function}: argument {argument} as a "
                                      "tensor is not supported inside a model yet; pass a "
                                      "Python number")
        raise ValueError(f"keras.random.{function}: argument {argument} must be a number, "
                         f"got {value!r}")
    return float(value)


def batch_reference(shape, function):
    """The input tensor of the layer being traced whose batch the draw takes."""
    tensors = call_inputs[-1]
    if not tensors:
        raise NotImplementedError(f"keras.random.{function} in {where()}: the layer has no "
                                  "tensor input to take the batch size from")
    reference = tensors[0]
    batch = reference.shape[0]
    if len(shape) < 2 or shape[0] is not None and shape[0] != batch:
        raise NotImplementedError(
            f"keras.random.{function} in {where()}: inside a model a draw's first axis is the "
            "batch and it has at least 2 axes, e.g. shape=(ops.shape(x)[0], dim); got shape "
            f"{shape} (batch {batch}). Draws without a batch axis are not supported inside a "
            "model yet")
    return reference


def planned_draw(function, shape, kind, a, b, seed, reference=None, op_class=RandomDrawOp):
    """The SymbolicTensor of a draw inside a model: a RandomDrawOp (or `op_class`) reading
    `reference` (by default the layer's first input) for its batch size."""
    shape = checked_shape(shape, function, batch_axis=True)
    if reference is None:
        reference = batch_reference(shape, function)
    state, advance = planned_state(seed, function)
    op = op_class(op_name(function), shape, kind, a, b, state, advance)
    drawn = apply(op, reference, flattened=False)
    drawn.data_format = CHANNELS_LAST  # the op's logical dims are Keras's, channels last
    return drawn


def planned_distribution(function, shape, a, b, seed):
    """A randint / gamma / beta / binomial draw inside a model (DistributionDrawOp), its
    parameters Python numbers."""
    return planned_draw(function, shape, function, a, b, seed, op_class=DistributionDrawOp)
