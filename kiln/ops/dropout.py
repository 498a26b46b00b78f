"""DropoutOp: y = x * mask / (1 - rate) in training, identity in inference.

oneDNN has no dropout, so this is a fused, multi-threaded numba kernel that draws the mask from
a counter-based hash (no RNG state per thread, reproducible from the seed) and runs on the
memory in whatever layout it has. The uint8 mask is kept for backward: dx = dy * mask * scale.
In bf16 the kernel writes the mask as bf16 values and oneDNN's binary mul applies it.
"""

import numpy as np

from ..binding import constants as dnnl
from ..binding.descriptor import descriptor
from .base import Op
from .numba_config import PARALLEL, SERIAL, THREADS, get_thread_id, njit, prange

# Indices cast to unsigned: numba's negative-index wrap turns contiguous loads into gathers.
U = np.uint64

# Each thread draws the mask of CHUNK elements at a time into its own row of scratch words.
CHUNK = 4096


@njit(**SERIAL)
def _mix64(z):
    """splitmix64's finalizer: seeds and step numbers become unrelated 64-bit salts."""
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


@njit(inline="always", **SERIAL)
def fill_keeps(first, count, salt, keep_threshold, words, out):
    """out[e] = 1 when element `first + e` is kept, else 0, for e < count.

    Element i is kept when 16-bit half number i % 4 (in memory order) of splitmix64's
    finalizer of (i // 4) ^ salt is at or above the threshold: one hash decides four elements.
    Hashing every element cost a large share of the fused pooling + dropout forward
    (docs/performance.md, 'Decisions and their measurements'); the hashes go to
    `words` (uint64 scratch of at least count // 4 + 2) so both loops vectorize, and the
    compare stays on uint16 lanes. 16 bits put the drop rate within 2**-17 of `rate`.
    """
    q0 = first // 4
    for q in range((first + count + 3) // 4 - q0):
        words[U(q)] = _mix64(np.uint64(q0 + q) ^ salt)
    halves = words.view(np.uint16)
    skip = first - 4 * q0
    for e in range(count):
        out[U(e)] = np.uint8(halves[U(skip + e)] >= keep_threshold)


def keep_scratch(elements):
    """Scratch words for fill_keeps: one row per numba thread, for up to `elements` a call."""
    return np.zeros((THREADS, elements // 4 + 2), dtype=np.uint64)


@njit(**SERIAL)
def step_salt(counter):
    """The salt of this step's mask; counter = [seed, step]."""
    return _mix64(_mix64(counter[0]) + counter[1]) >> np.uint64(32)


@njit(**PARALLEL)
def dropout_forward_kernel(x, y, mask, keep_threshold, scale, counter, words):
    """f32: y = x * keep * scale and the uint8 mask, in one pass.

    counter = [seed, step]; the step advances per call, so every step draws a new mask.
    words: keep_scratch(CHUNK).
    """
    n = x.size
    salt = step_salt(counter)
    for chunk in prange((n + CHUNK - 1) // CHUNK):
        first = chunk * CHUNK
        count = min(CHUNK, n - first)
        keeps = mask[first:first + count]
        fill_keeps(first, count, salt, keep_threshold, words[get_thread_id()], keeps)
        source, target = x[first:first + count], y[first:first + count]
        for e in range(count):
            target[U(e)] = source[U(e)] * (scale * keeps[U(e)])
    counter[1] += np.uint64(1)


@njit(**PARALLEL)
def dropout_mask_bf16_kernel(mask_bits, keep_threshold, scale_bits, counter, words, keeps):
    """bf16: the mask as bf16 values (0 or scale); a oneDNN binary mul applies it.

    words: keep_scratch(CHUNK); keeps: uint8 scratch of one CHUNK row per thread."""
    n = mask_bits.size
    salt = step_salt(counter)
    for chunk in prange((n + CHUNK - 1) // CHUNK):
        first = chunk * CHUNK
        count = min(CHUNK, n - first)
        thread = get_thread_id()
        row = keeps[thread]
        fill_keeps(first, count, salt, keep_threshold, words[thread], row)
        target = mask_bits[first:first + count]
        for e in range(count):
            target[U(e)] = scale_bits * row[U(e)]
    counter[1] += np.uint64(1)


@njit(**PARALLEL)
def dropout_backward_kernel(grad_out, mask, grad_in, scale):
    for i in prange(grad_out.size):
        grad_in[i] = grad_out[i] * scale * mask[i]


def keep_threshold(rate):
    """Drop when the element's 16-bit hash is below rate * 2**16."""
    return np.uint16(min(int(round(rate * (1 << 16))), (1 << 16) - 1))


class DropoutOp(Op):
    """Args: name, rate (fraction of inputs dropped, in [0, 1)), seed (int or None)."""

    per_image = True

    def __init__(self, name, rate, seed=None):
        if not 0.0 <= rate < 1.0:
            raise ValueError(f"Dropout '{name}': argument rate must be in [0, 1), got {rate}")
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
        if x.memory.desc.data_type == dnnl.bf16:
            return self._forward_bf16(builder, x, need_input_grad)
        source = x.memory
        output = builder.allocate(source.desc)
        mask = np.zeros(source.desc.size // 4, dtype=np.uint8)
        scale = np.float32(1.0 / (1.0 - self.rate))
        # Memory arguments (read at run time), not captured arrays: the input and output
        # then share bytes with other buffers by liveness (attention's dropout runs on its
        # (batch, heads, steps, steps) probabilities, the largest buffers of the step)
        builder.add_forward(builder.memory_kernel(
            dropout_forward_kernel,
            (source, output, mask, keep_threshold(self.rate), scale,
             self.counter, keep_scratch(CHUNK)), f"{self.name} forward"))

        def backward(output_grad):
            if not need_input_grad:
                return None
            grad = builder.reorder(output_grad, source.desc, f"{self.name} gradient",
                                   backward=True)
            input_grad = builder.allocate(source.desc)
            builder.add_backward(builder.memory_kernel(
                dropout_backward_kernel, (grad, mask, input_grad, scale),
                f"{self.name} backward"))
            return input_grad

        return x.with_memory(output), backward

    def _forward_bf16(self, builder, x, need_input_grad):
        """numba draws a bf16 mask (0 or scale); oneDNN's binary mul applies it both ways."""
        desc = x.memory.desc
        mask = builder.allocate(desc)
        scale = np.float32(1.0 / (1.0 - self.rate))
        scale_bits = np.uint16(scale.view(np.uint32) >> 16)  # truncation of 1/(1-rate) to bf16
        builder.add_forward(builder.kernel(
            dropout_mask_bf16_kernel,
            (mask.as_array(np.uint16), keep_threshold(self.rate), scale_bits, self.counter,
             keep_scratch(CHUNK), np.zeros((THREADS, CHUNK), np.uint8)),
            f"{self.name} mask"))
        multiply = builder.primitive(*descriptor(
            "dnnl_binary_primitive_desc_create", "binary mul", f"dropout '{self.name}' {desc}",
            dnnl.binary_mul, desc, desc, desc))
        output = builder.allocate(desc)
        builder.add_forward(builder.bind(multiply, {dnnl.ARG_SRC: x.memory, dnnl.ARG_SRC_1: mask,
                                                    dnnl.ARG_DST: output},
                                         f"{self.name} forward"))

        def backward(output_grad):
            if not need_input_grad:
                return None
            grad = builder.reorder(output_grad, desc, f"{self.name} gradient", backward=True)
            input_grad = builder.allocate(desc)
            builder.add_backward(builder.bind(multiply, {
                dnnl.ARG_SRC: grad, dnnl.ARG_SRC_1: mask, dnnl.ARG_DST: input_grad},
                f"{self.name} backward"))
            return input_grad

        return x.with_memory(output), backward
