"""keras.ops slicing (x[...], keras.ops.slice), split and stack.

Inside a model, along the non-batch axes with static bounds: a window of ints and basic
slices of step 1 (Ellipsis too) is the engine's SliceOp (a oneDNN reorder of the sub-block,
backward the gradient written into a zeroed buffer; see kiln/ops/slice.py) on the logical axes
of the Keras axes; an int index drops its axis afterwards (a ReshapeOp). split is several
slices; stack is expand_dims of each tensor (ReshapeOp) and one ConcatenateOp. The batch axis is
always taken whole; steps, new axes (None) and tensor indices are refused by name.
"""

import builtins

import numpy as np

from ...graph.symbolic import SymbolicTensor, apply
from ...ops.slice import SliceOp
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
from .shapes import _reshape_symbolic, concatenate, expand_dims

WHOLE = builtins.slice(None)


def _full_key(key, rank):
    """`key` as one entry per axis (Ellipsis and the missing trailing axes as ':')."""
    key = key if isinstance(key, tuple) else (key,)
    ellipses = [i for i, k in enumerate(key) if k is Ellipsis]
    if len(ellipses) > 1:
        raise IndexError(f"{where()}: an index can only have a single ellipsis ('...')")
    if ellipses:
        i = ellipses[0]
        key = key[:i] + (WHOLE,) * (rank - len(key) + 1) + key[i + 1:]
    if len(key) > rank:
        raise IndexError(f"{where()}: too many indices for a tensor of rank {rank}: {key!r}")
    return key + (WHOLE,) * (rank - len(key))


def _getitem_symbolic(x, key):
    function = "slicing (x[...])"
    shape = x.shape
    key = _full_key(key, len(shape))
    if not (isinstance(key[0], builtins.slice) and key[0] == WHOLE):
        not_in_model(function, f"an index {key[0]!r} of the batch axis (it is taken whole)")
    logical = keras_axes_to_logical(x)  # refuses flattened tensors
    starts, sizes = [0] * len(shape), [None] * len(shape)
    kept = [shape[0]]
    for axis in range(1, len(shape)):
        k, dim = key[axis], shape[axis]
        if isinstance(k, (int, np.integer)) and not isinstance(k, (bool, np.bool_)):
            if not -dim <= k < dim:
                raise IndexError(f"{where()}: index {int(k)} is out of bounds for axis {axis} "
                                 f"of size {dim} (shape {shape})")
            start, size = int(k) % dim, 1
        elif isinstance(k, builtins.slice):
            if k.step not in (None, 1):
                not_in_model(function, f"a step of {k.step} on axis {axis} (steps of 1 only)")
            if not all(b is None or isinstance(b, (int, np.integer)) for b in (k.start, k.stop)):
                not_in_model(function, f"bounds {k!r} on axis {axis} that are not Python ints")
            start, stop, _ = k.indices(dim)
            size = stop - start
            if size <= 0:
                not_in_model(function, f"an empty slice {k!r} of axis {axis} (size {dim})")
            kept.append(size)
        else:
            not_in_model(function, f"an index {k!r} on axis {axis} (ints and slices of step 1 "
                                   "with static bounds only)")
        starts[logical[axis]], sizes[logical[axis]] = start, size
    out = x
    if not all(sizes[logical[a]] == shape[a] for a in range(1, len(shape))):
        out = apply(SliceOp(op_name("slice"), starts, sizes), x)
    # int indices drop their axes (also an axis of size 1 taken whole: x[:, 0] of (N, 1, C))
    if len(kept) != len(shape):
        out = _reshape_symbolic("getitem", out, kept)
    return out


def getitem(x, key):
    if isinstance(x, SymbolicTensor):
        if is_symbolic(*(key if isinstance(key, tuple) else (key,))):
            not_in_model("slicing (x[...])", "a tensor index (the indices must be static)")
        return _getitem_symbolic(x, key)
    return result(keras_array(x)[key])


def slice(inputs, start_indices, shape):  # noqa: A001 (keras.ops.slice)
    """keras.ops.slice: the block of `shape` at `start_indices` (in a model the batch's start
    is 0 and its size None or -1: taken whole)."""
    if len(start_indices) != len(shape):
        raise ValueError(f"{where()}: keras.ops.slice arguments start_indices and shape must "
                         f"have the same length, got {start_indices!r} and {shape!r}")
    if isinstance(inputs, SymbolicTensor):
        if int(start_indices[0]) != 0 or shape[0] not in (None, -1, inputs.shape[0]):
            not_in_model("slice", f"start_indices {tuple(start_indices)} and shape "
                                  f"{tuple(shape)} that cut the batch axis")
        key = (WHOLE, *(builtins.slice(int(s), int(s) + int(n))
                        for s, n in zip(start_indices[1:], shape[1:], strict=True)))
        return _getitem_symbolic(inputs, key)
    array = keras_array(inputs)
    return result(array[tuple(builtins.slice(int(s), int(s) + (array.shape[i] if n in (None, -1)
                                                               else int(n)))
                              for i, (s, n) in enumerate(zip(start_indices, shape,
                                                             strict=True)))])


def split(x, indices_or_sections, axis=0):
    if isinstance(x, SymbolicTensor):
        rank = len(x.shape)
        (axis,) = normalize_axes(axis, rank, "split")
        if axis == 0:
            not_in_model("split", "along the batch axis")
        dim = x.shape[axis]
        if isinstance(indices_or_sections, (int, np.integer)):
            sections = int(indices_or_sections)
            if sections < 1 or dim % sections:
                raise ValueError(f"{where()}: keras.ops.split cannot cut axis {axis} of size "
                                 f"{dim} into {sections} equal parts")
            bounds = [dim * i // sections for i in range(sections + 1)]
        else:
            bounds = [0, *(min(max(int(i) % (dim + 1) if int(i) < 0 else int(i), 0), dim)
                           for i in indices_or_sections), dim]
        parts = []
        for start, stop in zip(bounds[:-1], bounds[1:], strict=True):
            if stop <= start:
                not_in_model("split", f"an empty part [{start}:{stop}] of axis {axis}")
            key = [WHOLE] * rank
            key[axis] = builtins.slice(start, stop)
            parts.append(_getitem_symbolic(x, tuple(key)))
        return parts
    return [result(part) for part in np.split(keras_array(x), indices_or_sections, axis)]


def stack(x, axis=0):
    if is_symbolic(*x):
        if not all(isinstance(t, SymbolicTensor) for t in x):
            not_in_model("stack", "a constant array among the tensors")
        shapes = {tuple(t.shape[1:]) for t in x}
        if len(shapes) > 1:
            raise ValueError(f"{where()}: keras.ops.stack needs tensors of one shape, got "
                             f"{[t.shape for t in x]}")
        (position,) = normalize_axes(axis, len(x[0].shape) + 1, "stack")
        if position == 0:
            not_in_model("stack", "along the batch axis (a new axis 0)")
        expanded = [expand_dims(t, position) for t in x]
        return expanded[0] if len(expanded) == 1 else concatenate(expanded, axis=position)
    return result(np.stack([keras_array(a) for a in x], axis=axis))
