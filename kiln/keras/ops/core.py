"""How every keras.ops function chooses between running now and joining the model.

On numpy arrays (and Python numbers, lists, weights) an op runs eagerly with numpy and
returns a numpy array with Keras 3's dtypes for kiln's float32 world: floats come back as
float32, integers as int32, comparisons as bool. On a SymbolicTensor (inside a layer's
`call()` while a model is traced) it emits an engine op instead, so the operation is part of
the compiled step and has a backward. An operation without an engine op raises
`NotImplementedError` naming it: there is no slow numpy fallback inside a plan.

Keras axes and engine axes differ for images: a channels_last tensor Keras shows as
(N, H, W, C) is logical (N, C, H, W) in the engine (see kiln/ops/tensor.py); `logical_axis`
maps one to the other.
"""

import itertools

import numpy as np

from ...graph.symbolic import SymbolicTensor, tracing
from ...ops.tensor import CHANNELS_LAST
from ..layers.weight import Weight

_counter = itertools.count()


def is_symbolic(*values):
    return any(isinstance(v, SymbolicTensor) for v in values)


def keras_array(value):
    """`value` as a numpy array with Keras's dtypes (float64 -> float32, int64 -> int32)."""
    if isinstance(value, SymbolicTensor):
        raise TypeError(f"{where()}: mixing a symbolic tensor into an eager computation")
    if isinstance(value, Weight) and tracing:
        # computed now, the result would be a constant of the plan that never trains
        raise NotImplementedError(
            f"{where()}: a keras.ops function on the weight '{value.path}' alone (without the "
            "layer's input tensor) inside call() is not supported yet; apply the weight to "
            "the tensor directly (e.g. keras.ops.multiply(x, self.w))")
    array = np.asarray(value.numpy() if isinstance(value, Weight) else value)
    if array.dtype == np.float64 or array.dtype == np.float16:
        return array.astype(np.float32)
    if array.dtype == np.int64 or array.dtype == np.uint64:
        return array.astype(np.int32)
    return array


def eager_operand(value):
    """A binary op's operand: Python numbers stay weakly typed (they take the array's dtype,
    as in Keras), the rest become arrays."""
    if isinstance(value, (bool, int, float)) and not isinstance(value, np.generic):
        return value
    return keras_array(value)


def result(array, float_result=False):
    """A numpy result with Keras's dtypes; `float_result` for math that makes ints float."""
    array = np.asarray(array)
    if array.dtype.kind in "iu" and float_result:
        return array.astype(np.float32)
    if array.dtype.kind == "f" and array.dtype != np.float32:
        return array.astype(np.float32)
    if array.dtype == np.int64:
        return array.astype(np.int32)
    return array


def where():
    """How messages name the code being traced: the layer whose call() runs, if any."""
    return tracing[-1] if tracing else "keras.ops"


LOSS_CONTEXT = "loss '{}'"  # how messages name a loss being traced (keras/losses/traced.py)


def loss_context(name):
    return LOSS_CONTEXT.format(name)


def in_traced_loss():
    """Whether the code being traced is a loss (keras/losses/traced.py). There a reduction to
    one value per sample, shape (None,), keeps its reduced axes as 1s instead (the engine has
    no rank-1 tensors): the same values, and the loss's reduction over all of its elements
    gives the same result."""
    return bool(tracing) and tracing[-1].startswith(LOSS_CONTEXT.split("{")[0])


def op_name(kind):
    """A unique engine op name under the layer being traced ("scale_layer/multiply_3")."""
    owner = tracing[-1].split("'")[1] if tracing and "'" in tracing[-1] else "ops"
    return f"{owner}/{kind}_{next(_counter)}"


def not_in_model(function, detail=""):
    """The refusal for an operation without an engine op yet."""
    raise NotImplementedError(
        f"{where()}: keras.ops.{function} works eagerly on arrays but not yet inside a "
        f"model (kiln has no engine op for it{': ' + detail if detail else ''}); compute it "
        "outside the model or use another keras.ops formulation")


def keras_axes_to_logical(tensor):
    """For each Keras axis of `tensor`, its logical (engine) axis."""
    rank = len(tensor.shape)
    if tensor.flattened:
        raise NotImplementedError(f"{where()}: keras.ops on a tensor flattened from 4D "
                                  f"({tensor.shape}) is not supported inside a model yet; "
                                  "use keras.ops before the Flatten layer or after a Dense")
    if rank == 4 and tensor.data_format == CHANNELS_LAST:
        return (0, 2, 3, 1)
    return tuple(range(rank))


def normalize_axes(axis, rank, function):
    """Keras's `axis` (None, an int or a tuple, negative from the end) as a sorted tuple."""
    if axis is None:
        return tuple(range(rank))
    axes = axis if isinstance(axis, (list, tuple)) else (axis,)
    normalized = []
    for a in axes:
        if not isinstance(a, (int, np.integer)) or not -rank <= a < rank:
            raise ValueError(f"{where()}: keras.ops.{function} argument axis must be ints in "
                             f"[-{rank}, {rank - 1}] for a rank-{rank} tensor, got {axis!r}")
        normalized.append(int(a) % rank)
    return tuple(sorted(set(normalized)))
