"""RandomDrawOp: a keras.random draw inside a model (`keras.random.normal(shape=(batch, dim),
seed=self.seed_generator)` in a layer's call()), planned as one numba kernel that draws new
values at every run of the plan.

The draw is JAX's threefry stream (threefry_kernels.py) for the key (seed, counter), the key
Keras 3 draws with on its JAX backend: `state` is a uint64 array [seed, counter], shared with
the SeedGenerator the draw came from, and the kernel adds `advance` (1) to the counter after
each run, as Keras's `SeedGenerator.next()` does. An int seed draws with the fixed key
(seed, 0) and does not advance: the same values every step, as in Keras. The eager
keras.random functions run the same kernel (`draw_array`), so a draw here and there agree.

The op reads one input, a tensor of the layer being traced, only for its batch size; its
output does not depend on the input's values, so the backward gives the input no gradient
(gradients flow through the arithmetic that uses the draw, not through the draw).
"""

import math

import numpy as np

from ..binding import constants as dnnl
from ..binding.memory import MemoryDesc
from .base import Op
from .numba_config import njit, prange
from .tensor import CHANNELS_LAST, Tensor, logical_dims
from .threefry_kernels import NORMAL, UNIFORM, draw_one, key_words

F32 = np.float32
KINDS = ("uniform", "normal", "truncated_normal", "keep_mask")


@njit(parallel=True, cache=True, nogil=True, error_model="numpy")
def draw_kernel(state, advance, kind, low, high, clip_low, clip_high, scale, shift, keep_below,
                out):
    """out = clip(draw, clip_low, clip_high) * scale + shift, or (keep_below > 0) the dropout
    mask `scale where the uniform draw < keep_below, else 0`, for the key (state[0],
    state[1]); then state[1] += advance. No fastmath: the values are Keras-on-JAX's."""
    keys = key_words(state[0], state[1])
    span = np.float64(np.float32(high - low))
    for i in prange(out.size):
        value = draw_one(keys, i, kind, low, span)
        if keep_below > np.float32(0.0):
            out[i] = scale if value < keep_below else np.float32(0.0)
        else:
            out[i] = min(max(value, clip_low), clip_high) * scale + shift
    state[1] += advance


def draw_arguments(kind, a=0.0, b=1.0):
    """The kernel's (kind, low, high, clip_low, clip_high, scale, shift, keep_below) for
    uniform(minval a, maxval b), normal / truncated_normal(mean a, stddev b) and keep_mask
    (keep probability a: the mask is 1 / a where kept)."""
    inf = F32(np.inf)
    if kind == "uniform":
        return UNIFORM, F32(a), F32(b), -inf, inf, F32(1.0), F32(0.0), F32(0.0)
    if kind == "normal":  # jax.random.normal: sqrt(2) erfinv(u), u uniform on (-1, 1)
        return (NORMAL, np.nextafter(F32(-1.0), F32(0.0)), F32(1.0), -inf, inf, F32(b), F32(a),
                F32(0.0))
    if kind == "truncated_normal":
        # jax.random.truncated_normal(lower=-2, upper=2): the inverse CDF of a uniform draw
        # between erf(-2 / sqrt(2)) and erf(2 / sqrt(2)), kept strictly inside (-2, 2)
        low, high = (F32(math.erf(float(F32(bound) / F32(math.sqrt(2.0))))) for bound in (-2, 2))
        return (NORMAL, low, high, np.nextafter(F32(-2.0), inf), np.nextafter(F32(2.0), -inf),
                F32(b), F32(a), F32(0.0))
    if kind == "keep_mask":
        return UNIFORM, F32(0.0), F32(1.0), -inf, inf, F32(1.0 / F32(a)), F32(0.0), F32(a)
    raise ValueError(f"random draw: unknown kind {kind!r}, expected one of {KINDS}")


def draw_array(shape, kind, a, b, key0, key1):
    """An eager draw of `shape` (float32) for the key (key0, key1)."""
    out = np.empty(int(np.prod(shape, dtype=np.int64)), np.float32)
    state = np.array([int(key0) & 0xFFFFFFFF, int(key1) & 0xFFFFFFFF], np.uint64)
    draw_kernel(state, np.uint64(0), *draw_arguments(kind, a, b), out)
    return out.reshape(shape)


class RandomDrawOp(Op):
    """Args:
        name: the op's name.
        keras_shape: the draw's Keras shape; its first axis is the batch, taken from the input.
        kind, a, b: as `draw_arguments`.
        state: uint64 array [seed, counter], shared with the draw's SeedGenerator.
        advance: 1 for a new draw at every run, 0 for the same draw (an int seed).
    """

    def __init__(self, name, keras_shape, kind, a, b, state, advance=1):
        self.name, self.keras_shape, self.kind = name, tuple(keras_shape), kind
        self.arguments = draw_arguments(kind, a, b)
        self.state, self.advance = state, np.uint64(advance)

    def output_dims(self, input_dims):
        return logical_dims((input_dims[0], *self.keras_shape[1:]), CHANNELS_LAST)

    def forward(self, builder, x, need_input_grad=True):
        if builder.data_type != dnnl.f32:
            raise ValueError(f"keras.random.{self.kind} '{self.name}': bfloat16 activations "
                             "are not supported yet (use the float32 policy)")
        dims = self.output_dims(x.dims)
        tag = dnnl.acdb if len(dims) == 4 else None  # Keras's (N, H, W, C) order in memory
        output = builder.allocate(MemoryDesc.with_tag(dims, dnnl.f32, tag))
        builder.add_forward(builder.memory_kernel(
            draw_kernel, (self.state, self.advance, *self.arguments, output),
            f"{self.name} draw"))
        return Tensor(output, CHANNELS_LAST), lambda output_grad: None
