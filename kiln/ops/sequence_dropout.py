"""The input dropout of Keras's recurrent layers (`dropout=`): in training, one mask per sample
and feature, the same at every time step (Keras 3's DropoutRNNCell draws it once per call for
the step input (batch, features)), scaled by 1 / (1 - rate); identity in inference.

A fused numba kernel draws the (N, C) mask with dropout.py's counter-based hash (a new mask
every step, reproducible from the seed) and applies it to the whole (N, T, C) sequence in the
same call; backward multiplies the gradient by the same mask. The recurrent primitive then
reads the dropped sequence.
"""

import numpy as np

from ..binding import constants as dnnl
from ..binding.memory import MemoryDesc
from .base import Op
from .dropout import CHUNK, U, fill_keeps, keep_scratch, keep_threshold, step_salt
from .numba_config import PARALLEL, get_thread_id, njit, prange


@njit(**PARALLEL)
def sequence_dropout_forward(x, y, mask, batch, steps, channels, threshold, scale, counter,
                             words):
    """mask (N * C) uint8 drawn, then y[n, t, c] = x[n, t, c] * mask[n, c] * scale."""
    size = batch * channels
    salt = step_salt(counter)
    for chunk in prange((size + CHUNK - 1) // CHUNK):
        first = chunk * CHUNK
        count = min(CHUNK, size - first)
        fill_keeps(first, count, salt, threshold, words[get_thread_id()],
                   mask[first:first + count])
    for row in prange(batch * steps):
        n = row // steps
        start, keeps = row * channels, n * channels
        for k in range(channels):
            y[U(start + k)] = x[U(start + k)] * (scale * mask[U(keeps + k)])
    counter[1] += np.uint64(1)


@njit(**PARALLEL)
def sequence_dropout_backward(grad_out, mask, grad_in, batch, steps, channels, scale):
    for row in prange(batch * steps):
        n = row // steps
        start, keeps = row * channels, n * channels
        for k in range(channels):
            grad_in[U(start + k)] = grad_out[U(start + k)] * (scale * mask[U(keeps + k)])


class SequenceDropoutOp(Op):
    """Args: name (the layer's, for messages), rate in [0, 1), seed (int or None)."""

    def __init__(self, name, rate, seed=None):
        if not 0.0 <= rate < 1.0:
            raise ValueError(f"RNN '{name}': argument dropout must be in [0, 1), got {rate}")
        self.name = name
        self.rate = float(rate)
        seed = np.random.randint(0, 2**62) if seed is None else seed
        self.counter = np.array([int(seed) % 2**64, 0], dtype=np.uint64)  # [seed, step]

    def output_dims(self, input_dims):
        return tuple(input_dims)

    def parameter_dims(self, input_dims):
        return {}

    def forward(self, builder, x, need_input_grad=True):
        if not builder.training or self.rate == 0.0:
            return x, lambda output_grad: output_grad
        n, t, c = x.dims
        plain = MemoryDesc.with_tag((n, t, c), dnnl.f32)
        source = builder.reorder(x.memory, plain, f"{self.name} dropout input")
        output = builder.allocate(plain)
        mask = np.zeros(n * c, dtype=np.uint8)  # the plan's, kept for backward
        scale = np.float32(1.0 / (1.0 - self.rate))
        builder.add_forward(builder.memory_kernel(
            sequence_dropout_forward,
            (source, output, mask, n, t, c, keep_threshold(self.rate), scale, self.counter,
             keep_scratch(CHUNK)), f"{self.name} input dropout"))

        def backward(output_grad):
            if not need_input_grad:
                return None
            grad = builder.reorder(output_grad, plain, f"{self.name} dropout gradient",
                                   backward=True)
            input_grad = builder.allocate(plain)
            builder.add_backward(builder.memory_kernel(
                sequence_dropout_backward, (grad, mask, input_grad, n, t, c, scale),
                f"{self.name} input dropout backward"))
            return input_grad

        return x.with_memory(output), backward
