"""ShuffleOp: keras.random.shuffle(x, axis, seed) inside a model (in a layer's call()), a new
permutation at every run of the plan.

Keras on JAX shuffles with `jax.random.permutation(key, x, axis, independent=True)`: every
vector along the axis (every line of the (outer, n, inner) view of x in Keras's order) gets
its own permutation, by `rounds` stable sorts on 32-bit random keys, the key split before
each. The kernel follows that algorithm on the threefry stream, as the eager
keras.random.shuffle does, so for the same key (state[0], state[1]) the values are the eager
ones. The composed permutation is kept (int64, per element) for the backward, which sends
each output gradient back to the input element it came from (the inverse permutation), as
JAX's permutation is differentiable with respect to x.
"""

import math

import numpy as np

from ..binding import constants as dnnl
from .base import Op
from .numba_config import PARALLEL, njit, prange
from .reshape import keras_layout
from .tensor import keras_shape
from .threefry_kernels import random_bits, split_key


@njit(cache=True, nogil=True)
def shuffle_order_kernel(state, advance, rounds, n, inner, order, bits):
    """order = for every line of the (outer, n, inner) view, the source index along the axis of
    each output element, drawn for the key (state[0], state[1]); then state[1] += advance.
    `bits`: uint32 scratch of order's size."""
    lines = order.size // n
    for line in range(lines):
        base = (line // inner) * n * inner + line % inner
        for j in range(n):
            order[base + j * inner] = j
    keys = np.empty((2, 2), np.uint64)
    key0, key1 = state[0], state[1] & np.uint64(0xFFFFFFFF)
    line_bits = np.empty(n, np.uint32)
    previous = np.empty(n, np.int64)
    for _ in range(rounds):
        split_key(key0, key1, keys)  # key, subkey = split(key)
        key0, key1 = keys[0, 0], keys[0, 1]
        random_bits(keys[1, 0], keys[1, 1], bits)
        for line in range(lines):
            base = (line // inner) * n * inner + line % inner
            for j in range(n):
                line_bits[j] = bits[base + j * inner]
                previous[j] = order[base + j * inner]
            sorted_positions = np.argsort(line_bits, kind="mergesort")  # stable, as numpy's
            for j in range(n):
                order[base + j * inner] = previous[sorted_positions[j]]
    state[1] += advance


@njit(**PARALLEL)
def shuffle_gather_kernel(x, y, order, n, inner, inverse):
    """y[line, j] = x[line, order[line, j]], or (inverse) y[line, order[line, j]] = x[line, j],
    over the lines of the (outer, n, inner) view."""
    lines = x.size // n
    for line in prange(lines):
        base = (line // inner) * n * inner + line % inner
        for j in range(n):
            i = base + j * inner
            k = base + order[i] * inner
            if inverse:
                y[k] = x[i]
            else:
                y[i] = x[k]


def shuffle_rounds(size):
    """JAX's number of sorting rounds for `size` elements."""
    return math.ceil(3 * math.log(max(1, size)) / math.log(2**32 - 1))


class ShuffleOp(Op):
    """Args: name, axis (a Keras axis of the input, 0 the batch), state (uint64 [seed,
    counter], shared with the SeedGenerator), advance (1: a new permutation every run; 0 for
    an int seed, the same one)."""

    def __init__(self, name, axis, state, advance=1):
        self.name, self.axis = name, int(axis)
        self.state, self.advance = state, np.uint64(advance)

    def output_dims(self, input_dims):
        if not 0 <= self.axis < len(input_dims):
            raise ValueError(f"keras.random.shuffle '{self.name}': axis {self.axis} is out of "
                             f"range for dims {tuple(input_dims)}")
        return tuple(input_dims)

    def forward(self, builder, x, need_input_grad=True):
        self.output_dims(x.dims)
        if x.memory.desc.data_type != dnnl.f32:
            raise NotImplementedError(f"keras.random.shuffle '{self.name}': bfloat16 "
                                      "activations are not supported yet (use the float32 "
                                      "policy)")
        plain = keras_layout(x.dims, x.data_format, x.flattened, dnnl.f32)
        source = builder.reorder(x.memory, plain, f"{self.name} input to plain layout")
        shape = keras_shape(x.dims, x.data_format, x.flattened)
        size = int(np.prod(shape, dtype=np.int64))
        n, inner = shape[self.axis], int(np.prod(shape[self.axis + 1:], dtype=np.int64))
        order = np.zeros(size, np.int64)  # kept for the backward
        builder.add_forward(builder.memory_kernel(
            shuffle_order_kernel,
            (self.state, self.advance, shuffle_rounds(size), n, inner, order,
             np.empty(size, np.uint32)), f"{self.name} permutation"))
        output = builder.allocate(plain)
        builder.add_forward(builder.memory_kernel(
            shuffle_gather_kernel, (source, output, order, n, inner, False),
            f"{self.name} shuffle"))

        def backward(output_grad):
            if not need_input_grad:
                return None
            grad = builder.reorder(output_grad, plain, f"{self.name} gradient to plain",
                                   backward=True)
            input_grad = builder.allocate(plain)
            builder.add_backward(builder.memory_kernel(
                shuffle_gather_kernel, (grad, input_grad, order, n, inner, True),
                f"{self.name} shuffle backward"))
            return input_grad

        return x.with_memory(output), backward
