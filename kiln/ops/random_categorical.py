"""CategoricalOp: keras.random.categorical(logits, num_samples, seed) inside a model (in a
layer's call()), new samples at every run of the plan.

jax.random.categorical takes, for each row b and sample s, the argmax over the classes c of
logits[b, c] + Gumbel noise -log(-log(u)), u uniform on [tiny, 1) drawn in shape (batch,
classes, samples); the kernel draws u element by element on the threefry stream for the key
(state[0], state[1]), as the eager keras.random.categorical does, so the same key gives the
same indices. They are held as float32 (every tensor of the plan is). The sample is not
differentiable: the logits get no gradient (zero, as in JAX).
"""

import numpy as np

from ..binding import constants as dnnl
from ..binding.memory import MemoryDesc
from .base import Op
from .numba_config import njit, prange
from .reshape import keras_layout
from .threefry_kernels import UNIFORM, draw_one, key_words

TINY = np.finfo(np.float32).tiny


@njit(parallel=True, cache=True, nogil=True, error_model="numpy")
def categorical_kernel(state, advance, logits, classes, samples, tiny, out):
    """out[b, s] = argmax_c logits[b, c] + gumbel(b, c, s) (flat, row-major); then
    state[1] += advance."""
    keys = key_words(state[0], state[1])
    span = np.float64(np.float32(np.float32(1.0) - tiny))
    for b in prange(out.size // samples):
        for s in range(samples):
            best, best_class = -np.inf, 0
            for c in range(classes):
                u = draw_one(keys, (b * classes + c) * samples + s, UNIFORM, tiny, span)
                gumbel = -np.log(-np.log(u))
                value = gumbel + logits[b * classes + c]
                if value > best or c == 0:
                    best, best_class = value, c
            out[b * samples + s] = np.float32(best_class)
    state[1] += advance


class CategoricalOp(Op):
    """Args: name, num_samples (>= 1), state (uint64 [seed, counter], shared with the
    SeedGenerator), advance (1: new samples every run; 0 for an int seed)."""

    def __init__(self, name, num_samples, state, advance=1):
        self.name, self.num_samples = name, int(num_samples)
        self.state, self.advance = state, np.uint64(advance)

    def output_dims(self, input_dims):
        if len(input_dims) != 2:
            raise ValueError(f"keras.random.categorical '{self.name}': logits must be 2D "
                             f"(batch_size, num_classes), got dims {tuple(input_dims)}")
        return (input_dims[0], self.num_samples)

    def forward(self, builder, x, need_input_grad=True):
        dims = self.output_dims(x.dims)
        if x.memory.desc.data_type != dnnl.f32:
            raise NotImplementedError(f"keras.random.categorical '{self.name}': bfloat16 "
                                      "activations are not supported yet (use the float32 "
                                      "policy)")
        plain = keras_layout(x.dims, x.data_format, x.flattened, dnnl.f32)
        logits = builder.reorder(x.memory, plain, f"{self.name} logits to plain layout")
        output = builder.allocate(MemoryDesc.with_tag(dims, dnnl.f32, None))
        builder.add_forward(builder.memory_kernel(
            categorical_kernel,
            (self.state, self.advance, logits, x.dims[1], self.num_samples, TINY, output),
            f"{self.name} categorical"))
        return x.with_memory(output), lambda output_grad: None
