"""Dropout: y = x * mask / (1 - rate) in training, identity in inference.

oneDNN has no dropout, so this is a fused, multi-threaded numba kernel that draws the mask from
a counter-based hash (no RNG state per thread, reproducible from the seed) and runs on the
memory in whatever layout it has. The uint8 mask is kept for backward: dx = dy * mask * scale.
In bf16 the kernel writes the mask as bf16 values and oneDNN's binary mul applies it.
"""

import numpy as np

from ..binding import constants as dnnl
from ..binding.memory import layout_key
from ..binding.primitive import PrimitiveDesc, default_attributes
from .numba_config import PARALLEL, SERIAL, njit, prange

LOW24 = np.uint64(0xFFFFFF)


@njit(**SERIAL)
def _mix64(z):
    """splitmix64's finalizer: seeds and step numbers become unrelated 64-bit salts."""
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


@njit(inline="always", **SERIAL)
def _keeps(i, salt, keep_threshold):
    """1 when element i is kept: 24 bits of splitmix64's finalizer of (i ^ salt) at or above
    the threshold.

    Two 64-bit multiplies per element (murmur3's 32-bit finalizer, written on uint64 because
    numba widens uint32 arithmetic, took three and ran 35% slower); in a plain prange it
    vectorizes, about 0.2 ms per million elements on 2 cores.
    """
    h = _mix64(np.uint64(i) ^ salt)
    return np.uint8(((h >> np.uint64(40)) & LOW24) >= keep_threshold)


@njit(**PARALLEL)
def dropout_forward_kernel(x, y, mask, keep_threshold, scale, counter):
    """f32: y = x * keep * scale and the uint8 mask, in one pass.

    counter = [seed, step]; the step advances per call, so every step draws a new mask.
    """
    n = x.size
    salt = _mix64(_mix64(counter[0]) + counter[1]) >> np.uint64(32)
    for i in prange(n):
        keep = _keeps(i, salt, keep_threshold)
        mask[i] = keep
        y[i] = x[i] * (scale * keep)
    counter[1] += np.uint64(1)


@njit(**PARALLEL)
def dropout_mask_bf16_kernel(mask_bits, keep_threshold, scale_bits, counter):
    """bf16: the mask as bf16 values (0 or scale); a oneDNN binary mul applies it."""
    n = mask_bits.size
    salt = _mix64(_mix64(counter[0]) + counter[1]) >> np.uint64(32)
    for i in prange(n):
        mask_bits[i] = scale_bits * _keeps(i, salt, keep_threshold)
    counter[1] += np.uint64(1)


@njit(**PARALLEL)
def dropout_backward_kernel(grad_out, mask, grad_in, scale):
    for i in prange(grad_out.size):
        grad_in[i] = grad_out[i] * scale * mask[i]


def keep_threshold(rate):
    """Drop when the 24-bit hash is below rate * 2**24."""
    return np.uint64(int(round(rate * (1 << 24))))


class Dropout:
    """Args: name, rate (fraction of inputs dropped, in [0, 1)), seed (int or None)."""

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
        builder.add_forward(builder.kernel(
            dropout_forward_kernel,
            (source.as_array(), output.as_array(), mask, keep_threshold(self.rate), scale,
             self.counter), f"{self.name} forward"))

        def backward(output_grad):
            if not need_input_grad:
                return None
            grad = builder.reorder(output_grad, source.desc, f"{self.name} gradient",
                                   backward=True)
            input_grad = builder.allocate(source.desc)
            builder.add_backward(builder.kernel(
                dropout_backward_kernel, (grad.as_array(), mask, input_grad.as_array(), scale),
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
            (mask.as_array(np.uint16), keep_threshold(self.rate), scale_bits, self.counter),
            f"{self.name} mask"))
        multiply = builder.primitive(("binary mul", layout_key(desc)), lambda: PrimitiveDesc(
            "dnnl_binary_primitive_desc_create", "binary mul", f"dropout '{self.name}' {desc}",
            dnnl.binary_mul, desc.handle, desc.handle, desc.handle, default_attributes().handle))
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
