"""Keras 2's backend functions (`from keras import backend as K`: K.mean, K.batch_dot, ...)
under their Keras 2 names and arguments (`axis`, `keepdims`, `K.clip(x, min_value,
max_value)`, `K.permute_dimensions(x, pattern)`), reached through `kiln.keras.backend`.

Each is the matching keras.ops call, so the same function runs eagerly on numpy arrays and,
on the symbolic tensors of a Lambda layer or a custom layer's call(), becomes engine ops of
the compiled step with their backward (kiln/keras/ops). Where Keras 2 differs from Keras 3's
op of the same name, the Keras 2 rule is written here: K.sqrt clips negatives to 0 first,
K.dot contracts the last axis of x with the second-to-last of y (numpy's dot), K.batch_dot
follows Keras 2.2.4's axes rules, K.l2_normalize divides by max(|x|, 1e-6) as TensorFlow's
`l2_normalize` (epsilon 1e-12 on the squared norm).
"""

import builtins

import numpy as np

from . import ops
from .backend import epsilon, floatx
from .ops.core import is_symbolic
from .ops.shapes import _reshape_symbolic

# the math Keras 2 takes straight from keras.ops (same arguments, same results)
square, exp, log, abs, sign = ops.square, ops.exp, ops.log, ops.abs, ops.sign  # noqa: A001
sigmoid, tanh, softplus, softsign = ops.sigmoid, ops.tanh, ops.softplus, ops.softsign
maximum, minimum, equal, not_equal = ops.maximum, ops.minimum, ops.equal, ops.not_equal
greater, greater_equal, less, less_equal = (ops.greater, ops.greater_equal, ops.less,
                                            ops.less_equal)
ones_like, zeros_like, transpose = ops.ones_like, ops.zeros_like, ops.transpose
pow = ops.power  # noqa: A001 (Keras 2's name)


def _keepdims_reduction(function):
    def run(x, axis=None, keepdims=False):
        return function(x, axis=axis, keepdims=keepdims)

    run.__name__ = function.__name__
    run.__doc__ = f"Keras 2's K.{function.__name__}(x, axis=None, keepdims=False)."
    return run


mean = _keepdims_reduction(ops.mean)
sum = _keepdims_reduction(ops.sum)  # noqa: A001 (Keras 2's name)
max = _keepdims_reduction(ops.max)  # noqa: A001
min = _keepdims_reduction(ops.min)  # noqa: A001
prod = _keepdims_reduction(ops.prod)
var = _keepdims_reduction(ops.var)
std = _keepdims_reduction(ops.std)


def sqrt(x):
    """sqrt(max(x, 0)): Keras 2 clips negatives to 0 first (a NaN-free distance)."""
    return ops.sqrt(ops.relu(x) if is_symbolic(x) else np.maximum(ops.convert_to_tensor(x),
                                                                    0))


def clip(x, min_value, max_value):
    """Keras 2: max_value None means no upper bound, and below min_value it is min_value."""
    if max_value is None:
        max_value = np.inf
    if max_value < min_value:
        max_value = min_value
    return ops.clip(x, min_value, max_value)


def relu(x, alpha=0.0, max_value=None, threshold=0.0):
    """x above threshold, max_value at most, alpha * (x - threshold) below (Keras 2)."""
    if is_symbolic(x):
        return ops.relu(x, negative_slope=alpha, max_value=max_value, threshold=threshold)
    x = ops.convert_to_tensor(x, "float32")
    out = np.where(x > threshold, x, 0).astype(np.float32) if threshold else np.maximum(x, 0)
    if max_value is not None:
        out = np.minimum(out, max_value)
    return out - alpha * np.maximum(threshold - x, 0) if alpha else out


def elu(x, alpha=1.0):
    return ops.elu(x, alpha)


def softmax(x, axis=-1):
    return ops.softmax(x, axis=axis)


def l2_normalize(x, axis=None):
    """x / sqrt(max(sum(x ** 2, axis), 1e-12)), as Keras 2 on TensorFlow."""
    squared = ops.sum(ops.square(x), axis=axis, keepdims=True)
    return ops.multiply(x, ops.rsqrt(ops.maximum(squared, 1e-12)))


def random_normal(shape, mean=0.0, stddev=1.0, dtype=None, seed=None):
    """`keras.random.normal`; inside a layer, shape=(K.shape(x)[0], dim) draws per step."""
    from .random import normal

    return normal(shape, mean=mean, stddev=stddev, dtype=dtype, seed=seed)


# -- shapes ----------------------------------------------------------------------------------
def int_shape(x):
    """The shape as a tuple of ints, None for a model tensor's batch axis."""
    dims = x.shape if hasattr(x, "shape") else np.shape(x)
    return tuple(None if d is None else int(d) for d in dims)


def shape(x):
    """Keras 2's symbolic shape; kiln's is `int_shape` (K.shape(x)[0] is a model's batch
    axis, which `K.reshape` and `K.random_normal` take as the batch)."""
    return int_shape(x)


def ndim(x):
    return len(int_shape(x))


def count_params(x):
    """The number of values of a weight or variable."""
    return int(np.prod(int_shape(x)))


def reshape(x, shape):
    return ops.reshape(x, shape)


def flatten(x):
    return ops.reshape(x, (-1,))


def batch_flatten(x):
    return ops.reshape(x, (-1, int(np.prod(int_shape(x)[1:]))))


def expand_dims(x, axis=-1):
    return ops.expand_dims(x, axis)


def squeeze(x, axis):
    return ops.squeeze(x, axis)


def permute_dimensions(x, pattern):
    return ops.transpose(x, tuple(pattern))


def concatenate(tensors, axis=-1):
    """Keras 2 counts a negative axis from the first tensor's rank."""
    if axis < 0:
        rank = ndim(tensors[0])
        axis = axis % rank if rank else 0
    return ops.concatenate(list(tensors), axis=axis)


def stack(x, axis=0):
    return ops.stack(list(x), axis=axis)


def repeat_elements(x, rep, axis):
    return ops.repeat(x, rep, axis=axis)


def tile(x, n):
    return ops.tile(x, [n] if isinstance(n, int) else list(n))


def gather(reference, indices):
    """Rows of `reference` (axis 0): a weight by a model's integer tensor is a lookup."""
    return ops.take(reference, indices, axis=0)


def argmax(x, axis=-1):
    return ops.argmax(x, axis=axis)


def argmin(x, axis=-1):
    return ops.argmin(x, axis=axis)


def cast(x, dtype):
    return ops.cast(x, dtype)


def round(x):  # noqa: A001 (Keras 2's name)
    return ops.round(x)


# -- products ----------------------------------------------------------------------------
def dot(x, y):
    """Keras 2's K.dot: the last axis of x against the second-to-last of y (the first of a
    2D y), free axes of x then of y, as numpy's dot; in a model y is a (K, N) weight."""
    if is_symbolic(x, y):
        if ndim(y) != 2:
            ops.core.not_in_model("dot", f"K.dot of shapes {int_shape(x)} and {int_shape(y)} "
                                  "(in a model: a tensor times a (K, N) weight)")
        return ops.matmul(x, y)
    return ops.dot(x, y)


def _batch_dot_plan(x_rank, y_rank, axes):
    """Keras 2.2.4's rules: (pad x, pad y, transpose x, transpose y, axes to squeeze)."""
    if isinstance(axes, int):
        axes = (axes, axes)
    if axes is None:
        axes = (x_rank - 1, y_rank - 2)
    if len(axes) != 2 or any(isinstance(a, (list, tuple)) for a in axes):
        raise ValueError(f"K.batch_dot: argument axes must be an int or a pair of ints, got "
                         f"{axes!r}")
    axes = tuple(int(a) % r for a, r in zip(axes, (x_rank, y_rank), strict=True))
    rank = x_rank if x_rank > y_rank else y_rank
    diff = builtins.abs(x_rank - y_rank)
    if diff == 0:
        squeeze_from = None
    elif x_rank > y_rank:
        squeeze_from = x_rank + y_rank - 3
    else:
        squeeze_from = x_rank - 1
    return axes, rank, diff, squeeze_from


def batch_dot(x, y, axes=None):
    """Keras 2.2.4's K.batch_dot: the lower-rank operand gets trailing 1s; two 2D operands
    give sum(x * y) over the axis (as (batch, 1)); higher ranks are a matmul batched over the
    leading axes, x read transposed unless axes[0] is its last axis, y transposed when
    axes[1] is its last; the padded axes are squeezed out again."""
    x_rank, y_rank = ndim(x), ndim(y)
    axes, rank, diff, squeeze_from = _batch_dot_plan(x_rank, y_rank, axes)
    x = _pad_trailing(x, rank)
    y = _pad_trailing(y, rank)
    if rank == 2:
        if axes[0] != axes[1]:
            if is_symbolic(x, y):
                ops.core.not_in_model("batch_dot", f"two 2D tensors with axes {axes}")
            return ops.expand_dims(ops.sum(ops.multiply(ops.transpose(x), y), axes[1]), -1)
        return ops.sum(ops.multiply(x, y), axis=axes[0], keepdims=True)
    if axes[0] != rank - 1:
        x = _swap_last_two(x)
    if axes[1] == rank - 1:
        y = _swap_last_two(y)
    out = ops.matmul(x, y)
    if diff:
        kept = [d for i, d in enumerate(int_shape(out))
                if not squeeze_from <= i < squeeze_from + diff]
        out = ops.reshape(out, kept if is_symbolic(out) else [-1, *kept[1:]])
    return out


def _pad_trailing(x, rank):
    shape = int_shape(x)
    if len(shape) == rank:
        return x
    target = (*shape, *(1,) * (rank - len(shape)))
    if is_symbolic(x):
        return _reshape_symbolic("batch_dot", x, target)
    return np.reshape(x, target)


def _swap_last_two(x):
    order = list(range(ndim(x)))
    order[-2:] = order[-1], order[-2]
    return ops.transpose(x, order)


def conv1d(x, kernel, strides=1, padding="valid", data_format=None, dilation_rate=1):
    """`keras.ops.conv` of a (batch, steps, channels) tensor; in a model the kernel is a
    weight from add_weight."""
    return ops.conv(x, kernel, strides, padding, data_format, dilation_rate)


def conv2d(x, kernel, strides=(1, 1), padding="valid", data_format=None,
           dilation_rate=(1, 1)):
    return ops.conv(x, kernel, strides, padding, data_format, dilation_rate)


# -- selection -----------------------------------------------------------------------------
def switch(condition, then_expression, else_expression):
    """then where condition, else elsewhere (either may be a function of no arguments); a
    condition of lower rank is extended with trailing axes, as Keras 2."""
    then_value = then_expression() if callable(then_expression) else then_expression
    else_value = else_expression() if callable(else_expression) else else_expression
    if isinstance(condition, (bool, int, np.bool_)):
        return then_value if condition else else_value
    rank = builtins.max(ndim(then_value) if hasattr(then_value, "shape") else 0,
                        ndim(else_value) if hasattr(else_value, "shape") else 0)
    if ndim(condition) < rank:
        condition = _pad_trailing(condition, rank)
    return ops.where(condition, then_value, else_value)


# -- values --------------------------------------------------------------------------------
def constant(value, dtype=None, shape=None, name=None):
    """A numpy array (float32 by default); a scalar value with a shape fills it."""
    dtype = getattr(dtype, "name", dtype) or floatx()
    if shape is not None:
        return np.full(shape, value, dtype=dtype)
    return np.asarray(value, dtype=dtype)


def variable(value, dtype=None, name=None, constraint=None):
    """A `keras.Variable` holding `value` (K.get_value / K.set_value read and write it)."""
    from .variables import Variable

    if constraint is not None:
        raise NotImplementedError("K.variable: argument constraint is not supported, "
                                  "expected None")
    dtype = getattr(dtype, "name", dtype) or floatx()
    return Variable(np.asarray(value, dtype=dtype), dtype=dtype, name=name)


def eval(x):  # noqa: A001 (Keras 2's name)
    """The value of a variable or array (K.get_value)."""
    from .backend import get_value

    return get_value(x)


def ones(shape, dtype=None, name=None):
    return np.ones(shape, dtype=getattr(dtype, "name", dtype) or floatx())


def zeros(shape, dtype=None, name=None):
    return np.zeros(shape, dtype=getattr(dtype, "name", dtype) or floatx())


def backend():
    """The name Keras 2 scripts test for: kiln follows TensorFlow's conventions."""
    return "tensorflow"


__all__ = ["abs", "argmax", "argmin", "backend", "batch_dot", "batch_flatten", "cast",
           "clip", "concatenate", "constant", "conv1d", "conv2d", "count_params", "dot", "elu",
           "epsilon", "equal", "eval", "exp", "expand_dims", "flatten", "gather", "greater",
           "greater_equal", "int_shape", "l2_normalize", "less", "less_equal", "log", "max",
           "maximum", "mean", "min", "minimum", "ndim", "not_equal", "ones", "ones_like",
           "permute_dimensions", "pow", "prod", "random_normal", "relu", "repeat_elements",
           "reshape", "round", "shape", "sigmoid", "sign", "softmax", "softplus", "softsign",
           "sqrt", "square", "squeeze", "stack", "std", "sum", "switch", "tanh", "tile",
           "transpose", "var", "variable", "zeros", "zeros_like"]
