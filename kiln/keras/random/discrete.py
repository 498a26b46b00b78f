"""keras.random's integer and permutation draws: randint, categorical and shuffle, eagerly.

Each follows jax.random's algorithm on the threefry stream, so for the same seed the values
are Keras-on-JAX's: randint combines two 32-bit draws of the key's two halves (jax.random.split),
shuffle sorts by 32-bit random keys (every vector along the axis on its own, as Keras's
`permutation(..., independent=True)` does), categorical takes the argmax of logits plus Gumbel
noise. Inside a layer's call() randint is a DistributionDrawOp (the same values, as float32),
shuffle of a tensor a ShuffleOp and categorical of tensor logits a CategoricalOp (the same
algorithm in a kernel: the eager values of the same key, new ones at every step).
"""

import math

import numpy as np

from ...graph.symbolic import SymbolicTensor, apply
from ...ops.random_categorical import CategoricalOp
from ...ops.random_draw import draw_array
from ...ops.random_shuffle import ShuffleOp
from ...ops.threefry_kernels import random_bits, split_key
from ..ops.core import keras_array, keras_axes_to_logical, op_name
from .arguments import INT_DTYPES, checked_shape, dtype_name, in_model, planned_distribution
from .seed_generator import check_seed, draw_key, is_int, planned_state


def refuse_in_model(function, *values):
    """Refuse `function` inside a model, or (`values` given) its arguments as tensors."""
    if (not values and in_model(function)) or any(isinstance(v, SymbolicTensor)
                                                  for v in values):
        raise NotImplementedError(
            f"keras.random.{function} works eagerly on arrays but not yet inside a model"
            f"{' with tensor arguments' if values else ''} (kiln has no engine op for it); "
            "draw outside the model, or use keras.random.normal / uniform / "
            "dropout / randint / gamma / beta / binomial with number arguments, or shuffle / "
            "categorical of a tensor of the layer, which run inside one")


def _split(key):
    keys = np.empty((2, 2), np.uint64)
    split_key(key[0], key[1], keys)
    return [(int(k[0]), int(k[1])) for k in keys]


def _bits(key, shape):
    out = np.empty(int(np.prod(shape, dtype=np.int64)), np.uint32)
    random_bits(key[0], key[1], out)
    return out.reshape(shape)


def randint(shape, minval, maxval, dtype="int32", seed=None):
    """Integers uniform on [minval, maxval), as `keras.random.randint` (inside a layer's
    call(): drawn at every step, held as float32 like every tensor of the plan)."""
    refuse_in_model("randint", minval, maxval)  # (tensor bounds)
    name = dtype_name(dtype)
    if name not in INT_DTYPES:
        raise ValueError(f"keras.random.randint: argument dtype must be an integer dtype, got "
                         f"{dtype!r}")
    for argument, value in (("minval", minval), ("maxval", maxval)):
        if not is_int(value):
            raise ValueError(f"keras.random.randint: argument {argument} must be an int, got "
                             f"{value!r}")
    if minval >= maxval:
        raise ValueError(f"keras.random.randint: argument minval must be below maxval, got "
                         f"minval={minval}, maxval={maxval}")
    info = np.iinfo(name)
    if minval < info.min or maxval > info.max or maxval - minval >= 2**32:
        raise ValueError(f"keras.random.randint: arguments minval and maxval must lie in "
                         f"{name}'s range [{info.min}, {info.max}] less than 2**32 apart, got "
                         f"minval={minval}, maxval={maxval}")
    check_seed(seed, "randint")
    if in_model("randint"):
        return planned_distribution("randint", shape, int(minval), int(maxval), seed)
    shape = checked_shape(shape, "randint")
    higher_key, lower_key = _split(draw_key(seed, "randint"))
    higher, lower = _bits(higher_key, shape), _bits(lower_key, shape)
    # jax.random.randint in uint32 arithmetic (products wrap at 2**32, as XLA's do):
    # (hi % span) * ((2**16 % span)**2 % span) + lo % span, mod span
    mask = np.uint64(0xFFFFFFFF)
    span = np.uint64(maxval - minval) & mask
    multiplier = np.uint64(2**16) % span
    multiplier = (multiplier * multiplier & mask) % span
    offset = ((higher % span) * multiplier & mask) + lower % span
    offset = (offset & mask) % span
    return (np.int64(minval) + offset.astype(np.int64)).astype(name)


def shuffle(x, axis=0, seed=None):
    """`x` with every vector along `axis` in a random order (Keras-on-JAX's shuffle; inside a
    layer's call(), of a tensor, a ShuffleOp: a new order at every step)."""
    symbolic = isinstance(x, SymbolicTensor)
    if not symbolic:
        refuse_in_model("shuffle")  # (a constant array inside a model)
    array = x if symbolic else keras_array(x)
    rank = len(array.shape)
    if rank == 0:
        raise ValueError("keras.random.shuffle: argument x must have at least one axis, got "
                         "a scalar")
    if not is_int(axis) or not -rank <= axis < rank:
        raise ValueError(f"keras.random.shuffle: argument axis must be an int in "
                         f"[-{rank}, {rank - 1}], got {axis!r}")
    check_seed(seed, "shuffle")
    if symbolic:
        keras_axes_to_logical(x)  # refuses tensors flattened from 4D
        state, advance = planned_state(seed, "shuffle")
        return apply(ShuffleOp(op_name("shuffle"), axis % rank, state, advance), x)
    key = draw_key(seed, "shuffle")
    rounds = math.ceil(3 * math.log(max(1, array.size)) / math.log(2**32 - 1))
    for _ in range(rounds):
        key, subkey = _split(key)
        order = np.argsort(_bits(subkey, array.shape), axis=axis, kind="stable")
        array = np.take_along_axis(array, order, axis=axis)
    return array


def categorical(logits, num_samples, dtype="int32", seed=None):
    """For each row of `logits` (batch, classes), `num_samples` class indices drawn with the
    probabilities softmax(row), as `keras.random.categorical`."""
    symbolic = isinstance(logits, SymbolicTensor)
    if not symbolic:
        refuse_in_model("categorical")  # (constant logits inside a model)
    array = logits if symbolic else keras_array(logits).astype(np.float32)
    if len(array.shape) != 2:
        raise ValueError(f"keras.random.categorical: argument logits must be a 2D array "
                         f"(batch_size, num_classes), got shape {tuple(array.shape)}")
    if not is_int(num_samples) or num_samples < 0:
        raise ValueError(f"keras.random.categorical: argument num_samples must be an int >= 0, "
                         f"got {num_samples!r}")
    name = dtype_name(dtype)
    if name not in INT_DTYPES:
        raise ValueError(f"keras.random.categorical: argument dtype must be an integer dtype, "
                         f"got {dtype!r}")
    check_seed(seed, "categorical")
    if symbolic:  # held as float32 like every tensor of the plan
        if num_samples < 1:
            raise ValueError(f"keras.random.categorical: inside a model argument num_samples "
                             f"must be >= 1, got {num_samples!r}")
        state, advance = planned_state(seed, "categorical")
        return apply(CategoricalOp(op_name("categorical"), num_samples, state, advance),
                     logits, flattened=False)
    batch, classes = array.shape
    tiny = float(np.finfo(np.float32).tiny)
    # jax.random.categorical: argmax over the classes of logits + Gumbel noise
    # -log(-log(u)), u uniform on [tiny, 1), drawn in shape (batch, classes, samples)
    u = draw_array((batch, classes, int(num_samples)), "uniform", tiny, 1.0,
                   *draw_key(seed, "categorical"))
    gumbel = -np.log(-np.log(u))
    return np.argmax(gumbel + array[:, :, None], axis=1).astype(name)
