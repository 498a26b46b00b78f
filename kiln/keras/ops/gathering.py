"""keras.ops take, tile and repeat: copies of a tensor's slices along a non-batch axis.

Inside a model with static indices / counts they are built from the engine's slicing and
concatenation (SliceOp windows, ConcatenateOp, ReshapeOp): each output slice is a copy of an
input slice, so the backward is those ops' backward, the gradients of a slice read several
times summed by the plan. take reads each run of consecutive indices as one window; tile
concatenates copies of the tensor; repeat concatenates copies of each slice. Indices that are
tensors (a gather by computed ids) and the batch axis are refused by name.
"""

import builtins

import numpy as np

from ...binding import constants as dnnl
from ...graph.symbolic import SymbolicTensor, apply
from ...ops.embedding import EmbeddingOp
from ..layers.custom_weights import bind_dims
from ..layers.weight import Weight
from .core import (
    is_symbolic,
    keras_array,
    normalize_axes,
    not_in_model,
    result,
    where,
)
from .shapes import _reshape_symbolic, concatenate
from .slicing import WHOLE, _getitem_symbolic


def _window(x, axis, start, stop):
    key = [WHOLE] * len(x.shape)
    key[axis] = builtins.slice(start, stop)
    return _getitem_symbolic(x, tuple(key))


def _join(parts, axis):
    return parts[0] if len(parts) == 1 else concatenate(parts, axis=axis)


def _model_axis(function, x, axis):
    if axis is None:
        not_in_model(function, "axis=None (it flattens the batch in with the rest)")
    (axis,) = normalize_axes(axis, len(x.shape), function)
    if axis == 0:
        not_in_model(function, "along the batch axis")
    return axis


def _rows_of_weight(table, ids, axis):
    """take(weight, ids, axis=0): the rows of a (rows, features) weight for (batch, steps)
    ids, as an Embedding layer gathers them."""
    if axis is None or len(table.shape) != 2 or (int(axis) % 2) != 0:
        not_in_model("take", f"a weight of shape {tuple(table.shape)} by tensor indices along "
                             f"axis {axis!r} (rows of a 2D weight, axis=0, only)")
    if len(ids.shape) != 2 or ids.flattened:
        not_in_model("take", f"indices of shape {ids.shape} (a (batch, steps) tensor of ids "
                             "only)")
    rows, features = (int(d) for d in table.shape)
    owner, short = table.path.rsplit("/", 1)
    bind_dims(table, (rows, features), dnnl.ab, where())
    return apply(EmbeddingOp(owner, rows, features, table=short), ids)


def take(x, indices, axis=None):
    if isinstance(x, Weight) and isinstance(indices, SymbolicTensor):
        return _rows_of_weight(x, indices, axis)
    if isinstance(x, SymbolicTensor):
        if is_symbolic(indices):
            not_in_model("take", "indices that are tensors (static indices only)")
        axis = _model_axis("take", x, axis)
        index_array = np.asarray(keras_array(indices))
        if index_array.dtype.kind not in "iu":
            raise TypeError(f"{where()}: keras.ops.take argument indices must be integers, "
                            f"got dtype {index_array.dtype}")
        dim = x.shape[axis]
        flat = index_array.reshape(-1).astype(np.int64)
        bad = flat[(flat < -dim) | (flat >= dim)]
        if bad.size:
            raise IndexError(f"{where()}: keras.ops.take argument indices has {int(bad[0])}, "
                             f"out of range for axis {axis} of size {dim} (shape {x.shape})")
        if flat.size == 0:
            not_in_model("take", "no indices")
        flat = flat % dim
        runs, start = [], 0  # runs of consecutive indices, each one window
        for i in range(1, flat.size + 1):
            if i == flat.size or flat[i] != flat[i - 1] + 1:
                runs.append((int(flat[start]), int(flat[i - 1]) + 1))
                start = i
        out = _join([_window(x, axis, a, b) for a, b in runs], axis)
        shape = list(x.shape)
        shape[axis:axis + 1] = index_array.shape
        return out if tuple(shape) == tuple(out.shape) else _reshape_symbolic("take", out,
                                                                              shape)
    return result(np.take(keras_array(x), keras_array(indices), axis=axis))


def tile(x, repeats):
    if isinstance(x, SymbolicTensor):
        counts = [int(r) for r in np.atleast_1d(repeats)]
        rank = len(x.shape)
        if len(counts) > rank:
            not_in_model("tile", f"repeats {tuple(counts)} that add axes to shape {x.shape}")
        counts = [1] * (rank - len(counts)) + counts
        if counts[0] != 1:
            not_in_model("tile", f"repeats {tuple(counts)} that repeat the batch axis")
        if any(c < 1 for c in counts):
            raise ValueError(f"{where()}: keras.ops.tile argument repeats must be >= 1 inside "
                             f"a model, got {tuple(counts)}")
        out = x
        for axis, count in enumerate(counts):
            if count > 1:
                out = concatenate([out] * count, axis=axis)
        return out
    return result(np.tile(keras_array(x), repeats))


def repeat(x, repeats, axis=None):
    if isinstance(x, SymbolicTensor):
        if is_symbolic(repeats):
            not_in_model("repeat", "repeats that are tensors")
        axis = _model_axis("repeat", x, axis)
        dim = x.shape[axis]
        counts = np.broadcast_to(np.asarray(repeats, dtype=np.int64), (dim,))
        if np.ndim(repeats) > 1 or (counts < 0).any() or not counts.any():
            raise ValueError(f"{where()}: keras.ops.repeat argument repeats must be an int or "
                             f"{dim} ints >= 0, not all 0, got {repeats!r}")
        parts = []
        for i, count in enumerate(counts):
            parts += [_window(x, axis, i, i + 1)] * int(count)
        return _join(parts, axis)
    return result(np.repeat(keras_array(x), repeats, axis=axis))
