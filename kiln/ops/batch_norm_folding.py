"""A batch norm after a convolution, folded into the convolution in inference plans.

With the moving statistics, batch normalization is a per-channel affine map,
y = x * scale + shift with scale = gamma / sqrt(moving_variance + epsilon) and
shift = beta - moving_mean * scale, so an inference plan needs no pass of its own for it: the
convolution applies scale and shift as binary post-ops (and the relu after them), writing the
normalized output directly. scale and shift are computed at the start of each inference step
by two tiny oneDNN calls over C floats, so they always follow the current weights (the same
plan serves predict() between training epochs).
"""

from dataclasses import dataclass

from ..binding import constants as dnnl
from ..binding.descriptor import descriptor
from ..binding.memory import Memory, MemoryDesc
from ..binding.post_ops import binary, eltwise
from ..binding.primitive import post_op_arg


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
        variance = builder.param(f"{bn.name}/moving_variance", plain)
        mean = builder.param(f"{bn.name}/moving_mean", plain)
        scale, shift = builder.allocate(plain), builder.allocate(plain)
        shapes = f"folded batch norm '{bn.name}' ({channels},)"

        # scale = ((variance + epsilon) ** -0.5) [* gamma]: oneDNN 3.2 takes no post-ops on
        # eltwise, so these are separate calls (in place), each over C floats
        for alg, alpha, beta, what in ((dnnl.eltwise_linear, 1.0, bn.epsilon, "variance + eps"),
                                       (dnnl.eltwise_pow, 1.0, -0.5, "1 / sqrt")):
            pd = builder.primitive(*descriptor(
                "dnnl_eltwise_forward_primitive_desc_create", "eltwise forward", shapes,
                dnnl.forward_inference, alg, plain, plain, alpha, beta))
            source = variance if alg == dnnl.eltwise_linear else scale
            builder.add_forward(builder.bind(pd, {dnnl.ARG_SRC: source, dnnl.ARG_DST: scale},
                                             f"{bn.name} folded scale: {what}"))
        if bn.scale:
            gamma_pd = builder.primitive(*descriptor(
                "dnnl_binary_primitive_desc_create", "binary", shapes, dnnl.binary_mul, plain,
                plain, plain))
            builder.add_forward(builder.bind(gamma_pd, {
                dnnl.ARG_SRC: scale, dnnl.ARG_SRC_1: builder.param(f"{bn.name}/gamma", plain),
                dnnl.ARG_DST: scale}, f"{bn.name} folded scale times gamma"))

        # shift = -(mean * scale) [+ beta]
        shift_ops = eltwise(dnnl.eltwise_linear, -1.0)
        if bn.center:
            shift_ops += binary(dnnl.binary_add, plain)
        shift_pd = builder.primitive(*descriptor(
            "dnnl_binary_primitive_desc_create", "binary", shapes, dnnl.binary_mul, plain,
            plain, plain, post_ops=shift_ops))
        args = {dnnl.ARG_SRC: mean, dnnl.ARG_SRC_1: scale, dnnl.ARG_DST: shift}
        if bn.center:
            args[post_op_arg(1)] = builder.param(f"{bn.name}/beta", plain)
        builder.add_forward(builder.bind(shift_pd, args, f"{bn.name} folded shift"))
        # the convolution reads them broadcast over (N, H, W)
        return Memory(broadcast, scale.storage), Memory(broadcast, shift.storage)


def fold_into_conv(conv, bn):
    """A new convolution like `conv` (without activation) that also applies inference-mode
    `bn` (and its fused relu)."""
    return conv.replace(channel_affine=FoldedBatchNorm(bn),
                        activation="relu" if bn.fuse_relu else None)
