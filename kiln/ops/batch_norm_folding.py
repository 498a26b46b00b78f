"""A batch norm after a convolution, folded into the convolution in inference plans.

With the moving statistics, batch normalization is a per-channel affine map,
y = x * scale + shift with scale = gamma / sqrt(moving_variance + epsilon) and
shift = beta - moving_mean * scale, so an inference plan needs no pass of its own for it: the
convolution applies scale and shift as binary post-ops (and the relu after them), writing the
normalized output directly. scale and shift are computed at the start of each inference step
by two tiny oneDNN calls over C floats, so they always follow the current weights (the same
plan serves predict() between training epochs).
"""

import copy

from ..binding import constants as dnnl
from ..binding.memory import Memory, MemoryDesc
from ..binding.primitive import Attributes, PrimitiveDesc, default_attributes, post_op_arg


class FoldedBatchNorm:
    """The Conv2D.channel_affine hook for batch norm `bn`: plans scale and shift."""

    def __init__(self, bn):
        self.bn = bn

    def __call__(self, builder, channels):
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
            pd = builder.primitive(("fold eltwise", channels, alg, alpha, beta),
                                   lambda alg=alg, alpha=alpha, beta=beta: PrimitiveDesc(
                "dnnl_eltwise_forward_primitive_desc_create", "eltwise forward", shapes,
                dnnl.forward_inference, alg, plain.handle, plain.handle, alpha, beta,
                default_attributes().handle))
            source = variance if alg == dnnl.eltwise_linear else scale
            builder.add_forward(builder.bind(pd, {dnnl.ARG_SRC: source, dnnl.ARG_DST: scale},
                                             f"{bn.name} folded scale: {what}"))
        if bn.scale:
            gamma_pd = builder.primitive(("fold gamma", channels), lambda: PrimitiveDesc(
                "dnnl_binary_primitive_desc_create", "binary", shapes, dnnl.binary_mul,
                plain.handle, plain.handle, plain.handle, default_attributes().handle))
            builder.add_forward(builder.bind(gamma_pd, {
                dnnl.ARG_SRC: scale, dnnl.ARG_SRC_1: builder.param(f"{bn.name}/gamma", plain),
                dnnl.ARG_DST: scale}, f"{bn.name} folded scale times gamma"))

        # shift = -(mean * scale) [+ beta]
        shift_ops = [(dnnl.eltwise_linear, -1.0, 0.0)]
        if bn.center:
            shift_ops.append(("binary", dnnl.binary_add, plain))

        def make_shift():
            attributes = Attributes(shift_ops)  # alive until the descriptor exists
            return PrimitiveDesc("dnnl_binary_primitive_desc_create", "binary", shapes,
                                 dnnl.binary_mul, plain.handle, plain.handle, plain.handle,
                                 attributes.handle)

        shift_pd = builder.primitive(("fold shift", channels, bn.center), make_shift)
        args = {dnnl.ARG_SRC: mean, dnnl.ARG_SRC_1: scale, dnnl.ARG_DST: shift}
        if bn.center:
            args[post_op_arg(1)] = builder.param(f"{bn.name}/beta", plain)
        builder.add_forward(builder.bind(shift_pd, args, f"{bn.name} folded shift"))
        # the convolution reads them broadcast over (N, H, W)
        return Memory(broadcast, scale.storage), Memory(broadcast, shift.storage)


def fold_into_conv(conv, bn):
    """A copy of `conv` (without activation) that also applies inference-mode `bn`."""
    folded = copy.copy(conv)
    folded.channel_affine = FoldedBatchNorm(bn)
    folded.activation = "relu" if bn.fuse_relu else None
    folded.name = conv.name
    return folded
