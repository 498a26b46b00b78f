"""DistributionDrawOp: keras.random's randint, gamma, beta and binomial inside a model
(`keras.random.gamma((ops.shape(x)[0], 4), 2.0, seed=self.seed_generator)` in a layer's
call()), one numba kernel that draws new values at every run of the plan, as RandomDrawOp
(random_draw.py) does for the normal and uniform draws.

The key is (state[0], state[1]), state shared with the SeedGenerator and its counter advanced
by `advance` after each run. randint follows jax.random.randint on the threefry stream (the
eager keras.random.randint's algorithm: the same values for the same key, as ints in the
plan's float32). gamma, beta and binomial, which JAX draws by rejection with a key per
element and kiln does not reproduce (neither does the eager version), draw from numba's
generator seeded with the key: Keras's distributions, not Keras-on-JAX's numbers.
"""

import numpy as np

from ..binding import constants as dnnl
from ..binding.memory import MemoryDesc
from .numba_config import njit
from .random_draw import RandomDrawOp
from .tensor import CHANNELS_LAST, Tensor
from .threefry_kernels import random_bits, split_key

KINDS = ("randint", "gamma", "beta", "binomial")
_MASK = np.uint64(0xFFFFFFFF)


@njit(cache=True, nogil=True)
def randint_kernel(state, advance, low, high, out, higher, lower):
    """out = jax.random.randint(key, minval=low, maxval=high) as float32 for the key
    (state[0], state[1]) (`higher`, `lower`: uint32 scratch of out's size)."""
    keys = np.empty((2, 2), np.uint64)
    split_key(state[0], state[1], keys)
    random_bits(keys[0, 0], keys[0, 1], higher)
    random_bits(keys[1, 0], keys[1, 1], lower)
    span = np.uint64(high - low) & _MASK
    multiplier = np.uint64(65536) % span
    multiplier = (multiplier * multiplier & _MASK) % span
    for i in range(out.size):
        offset = ((np.uint64(higher[i]) % span) * multiplier & _MASK) + np.uint64(lower[i]) % span
        out[i] = np.float32(np.int64(low) + np.int64((offset & _MASK) % span))
    state[1] += advance


@njit(cache=True, nogil=True)
def distribution_kernel(state, advance, kind, a, b, out):
    """out = gamma(a) (kind 1), beta(a, b) (2) or binomial(a trials, probability b) (3)
    draws from numba's generator seeded with the key (state[0], state[1])."""
    np.random.seed(np.uint32((state[0] * np.uint64(2654435761) + state[1]) & _MASK))
    for i in range(out.size):
        if kind == 1:
            out[i] = np.float32(np.random.gamma(a))
        elif kind == 2:
            out[i] = np.float32(np.random.beta(a, b))
        else:
            out[i] = np.float32(np.random.binomial(int(a), b))
    state[1] += advance


class DistributionDrawOp(RandomDrawOp):
    """Args as RandomDrawOp's; `kind` one of KINDS, (a, b): (minval, maxval), (alpha, -),
    (alpha, beta) or (counts, probability)."""

    def __init__(self, name, keras_shape, kind, a, b, state, advance=1):
        if kind not in KINDS:
            raise ValueError(f"random draw: unknown kind {kind!r}, expected one of {KINDS}")
        self.name, self.keras_shape, self.kind = name, tuple(keras_shape), kind
        self.a, self.b = a, b
        self.state, self.advance = state, np.uint64(advance)

    def forward(self, builder, x, need_input_grad=True):
        if builder.data_type != dnnl.f32:
            raise ValueError(f"keras.random.{self.kind} '{self.name}': bfloat16 activations "
                             "are not supported yet (use the float32 policy)")
        dims = self.output_dims(x.dims)
        tag = dnnl.acdb if len(dims) == 4 else None  # Keras's (N, H, W, C) order in memory
        output = builder.allocate(MemoryDesc.with_tag(dims, dnnl.f32, tag))
        size = int(np.prod(dims))
        if self.kind == "randint":
            arguments = (self.state, self.advance, np.int64(self.a), np.int64(self.b), output,
                         np.empty(size, np.uint32), np.empty(size, np.uint32))
            kernel = randint_kernel
        else:
            arguments = (self.state, self.advance, KINDS.index(self.kind), np.float64(self.a),
                         np.float64(self.b), output)
            kernel = distribution_kernel
        builder.add_forward(builder.memory_kernel(kernel, arguments, f"{self.name} draw"))
        return Tensor(output, CHANNELS_LAST), lambda output_grad: None
