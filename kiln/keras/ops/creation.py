"""keras.ops functions that make arrays: arange, linspace, and the triangles triu / tril.

arange and linspace take numbers (shapes are static: `ops.shape(x)[-1]` inside call() is a
Python int), so inside a model too they return numpy arrays: constants of the plan wherever
they meet a tensor (`x + positions`, a layer called on them), as JAX bakes a constant into the
traced function. triu / tril of an array is numpy's; of a tensor (rank 3 or more, the
triangle over its last two axes) it is the tensor times the constant 0 / 1 triangle
(BroadcastBinaryOp with the mask held by the plan), so its gradient is the same mask.
"""

import numpy as np

from ...graph.symbolic import SymbolicTensor
from .core import is_symbolic, keras_array, not_in_model, result, where


def _dtype(values, dtype):
    if dtype is not None:
        return getattr(dtype, "name", dtype)
    integral = all(isinstance(v, (int, np.integer)) and not isinstance(v, bool)
                   for v in values if v is not None)
    return "int32" if integral else "float32"


def arange(start, stop=None, step=1, dtype=None):
    if is_symbolic(start, stop, step):
        not_in_model("arange", "bounds that are tensors (use Python ints: ops.shape(x)[i])")
    if stop is None:
        start, stop = 0, start
    if step == 0:
        raise ValueError(f"{where()}: keras.ops.arange argument step must not be 0")
    return np.arange(start, stop, step).astype(_dtype((start, stop, step), dtype))


def linspace(start, stop, num=50, endpoint=True, retstep=False, dtype=None, axis=0):
    if is_symbolic(start, stop):
        not_in_model("linspace", "bounds that are tensors")
    if not isinstance(num, (int, np.integer)) or num < 0:
        raise ValueError(f"{where()}: keras.ops.linspace argument num must be an int >= 0, "
                         f"got {num!r}")
    values, spacing = np.linspace(keras_array(start), keras_array(stop), int(num),
                                  endpoint=endpoint, retstep=True, axis=axis)
    values = values.astype(getattr(dtype, "name", dtype) or np.float32)
    return (values, result(spacing)) if retstep else values


def _triangle(name, numpy_function):
    def run(x, k=0):
        if not isinstance(k, (int, np.integer)) or isinstance(k, bool):
            raise ValueError(f"{where()}: keras.ops.{name} argument k must be an int, got {k!r}")
        rank = len(x.shape) if isinstance(x, SymbolicTensor) else np.ndim(x)
        if rank < 2:
            raise ValueError(f"{where()}: keras.ops.{name} argument x must have rank >= 2 (the "
                             f"triangle is over its last two axes), got shape "
                             f"{tuple(np.shape(x)) if rank == 0 else tuple(x.shape)}")
        if isinstance(x, SymbolicTensor):
            if rank == 2:
                not_in_model(name, f"a tensor of shape {x.shape}: its last two axes include "
                                   "the batch")
            from .elementwise import multiply

            mask = numpy_function(np.ones(x.shape[-2:], np.float32), int(k))
            return multiply(x, mask)
        return result(numpy_function(keras_array(x), int(k)))

    run.__name__ = name
    return run


triu = _triangle("triu", np.triu)
tril = _triangle("tril", np.tril)
