"""A batch norm after a convolution, folded into the convolution in inference plans.

With the moving statistics, batch normalization is a per-channel affine map,
y = x * scale + shift with scale = gamma / sqrt(moving_variance + epsilon) and
shift = beta - moving_mean * scale, so an inference plan needs no pass of its own for it: the
convolution applies scale and shift as binary post-ops (and the relu after them), writing the
normalized output directly. scale and shift are computed at the start of each inference step
by one serial numba call over C floats, so they always follow the current weights (the same
plan serves predict() between training epochs). It replaced four oneDNN calls (two eltwise,
two binary) per batch norm: 212 tiny multithreaded calls a ResNet50 inference step, each a
fork and join of the thread team, about 5 ms of work at most but costly on a loaded machine.
"""

from dataclasses import dataclass

import numpy as np

from ..binding import constants as dnnl
from ..binding.memory import Memory, MemoryDesc
from .numba_config import SERIAL, njit

EMPTY = np.zeros(0, np.float32)  # no gamma (scale=False) or no beta (center=False)


@njit(**SERIAL)
def fold_kernel(variance, mean, gamma, beta, epsilon, scale, shift):
    """scale = gamma / sqrt(variance + epsilon), shift = beta - mean * scale, over C floats
    (gamma 1 and beta 0 when empty)."""
    for c in range(scale.size):
        value = np.float32(1.0) / np.sqrt(variance[c] + epsilon)
        if gamma.size:
            value *= gamma[c]
        scale[c] = value
        shift[c] = (beta[c] if beta.size else np.float32(0.0)) - mean[c] * value


@dataclass(frozen=True, eq=False)
class FoldedBatchNorm:
    """A Conv2DOp's channel_affine: inference-mode batch norm `bn` after the convolution."""

    bn: object

    def plan(self, builder, channels):
        """Plan scale and shift at the start of the step; returns their Memories, (1, C, 1,
        1) views the convolution reads as binary post-ops."""
        bn = self.bn
        plain = MemoryDesc.with_tag((channels,), dnnl.f32, dnnl.a)
        broadcast = MemoryDesc.with_tag((1, channels, 1, 1), dnnl.f32, dnnl.abcd)
        scale, shift = builder.allocate(plain), builder.allocate(plain)
        gamma = builder.param(f"{bn.name}/gamma", plain) if bn.scale else EMPTY
        beta = builder.param(f"{bn.name}/beta", plain) if bn.center else EMPTY
        builder.add_forward(builder.memory_kernel(fold_kernel, (
            builder.param(f"{bn.name}/moving_variance", plain),
            builder.param(f"{bn.name}/moving_mean", plain), gamma, beta,
            np.float32(bn.epsilon), scale, shift), f"{bn.name} folded scale and shift"))
        # the convolution reads them broadcast over (N, H, W)
        return Memory(broadcast, scale.storage), Memory(broadcast, shift.storage)


def fold_into_conv(conv, bn):
    """A new convolution like `conv` (without activation) that also applies inference-mode
    `bn` (and its fused relu)."""
    return conv.replace(channel_affine=FoldedBatchNorm(bn),
                        activation="relu" if bn.fuse_relu else None)
