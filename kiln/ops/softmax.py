"""SoftmaxOp (and log-softmax) over one axis, as oneDNN softmax forward / backward.

The axis is a Keras axis (of the shape Keras shows); oneDNN works on logical dims (N, C, H, W),
so a channels_last 4D tensor's Keras axes (N, H, W, C) map to logical (0, 2, 3, 1). It runs in
the input's layout, blocked or not. A 4D tensor seen through a Flatten is first reordered to
the (N, features) matrix in Keras's (H, W, C) order (MobileNetV3 ends Flatten -> softmax).
"""

from ..binding import constants as dnnl
from ..binding.descriptor import descriptor
from .base import Op
from .flatten import FlattenToMatrixOp

ALGORITHMS = {"softmax": dnnl.softmax_accurate, "log_softmax": dnnl.softmax_log}
# Keras axis of a channels_last 4D tensor -> logical axis
_CHANNELS_LAST_AXES = (0, 2, 3, 1)


def logical_axis(axis, rank, data_format, context):
    """The logical axis of Keras axis `axis` (negative counts from the end) of a rank-`rank`
    tensor; the batch axis is refused."""
    if not isinstance(axis, int) or not -rank <= axis < rank or axis % rank == 0:
        raise ValueError(f"{context}: argument axis must be an int in [1, {rank - 1}] or "
                         f"[-{rank - 1}, -1] (not the batch axis), got {axis!r}")
    axis %= rank
    if rank == 4 and data_format == "channels_last":
        return _CHANNELS_LAST_AXES[axis]
    return axis


class SoftmaxOp(Op):
    """Args: name, axis (Keras axis, default -1), kind ('softmax' or 'log_softmax')."""

    def __init__(self, name, axis=-1, kind="softmax"):
        self.name, self.axis, self.kind = name, axis, kind

    def output_dims(self, input_dims):
        return tuple(input_dims)

    def forward(self, builder, x, need_input_grad=True):
        context = f"Softmax '{self.name}'"
        if x.flattened:
            return self._forward_flattened(builder, x, need_input_grad)
        axis = logical_axis(self.axis, len(x.dims), x.data_format, context)
        alg = ALGORITHMS[self.kind]
        desc = x.memory.desc
        shapes = f"{self.kind} '{self.name}' {desc} axis {axis}"
        fwd = builder.primitive(*descriptor(
            "dnnl_softmax_forward_primitive_desc_create", "softmax forward", shapes,
            builder.prop_kind, alg, desc, desc, axis))
        output = builder.allocate(desc)
        builder.add_forward(builder.bind(fwd, {dnnl.ARG_SRC: x.memory, dnnl.ARG_DST: output},
                                         f"{self.name} {self.kind}"))

        def backward(output_grad):
            if not need_input_grad:
                return None
            bwd = builder.primitive(*descriptor(
                "dnnl_softmax_backward_primitive_desc_create", "softmax backward", shapes,
                alg, desc, desc, desc, axis, fwd.pd))
            grad = builder.reorder(output_grad, desc, f"{self.name} gradient", backward=True)
            input_grad = builder.allocate(desc)
            builder.add_backward(builder.bind(bwd, {dnnl.ARG_DST: output, dnnl.ARG_DIFF_DST: grad,
                                                    dnnl.ARG_DIFF_SRC: input_grad},
                                              f"{self.name} {self.kind} backward"))
            return input_grad

        return x.with_memory(output), backward

    def _forward_flattened(self, builder, x, need_input_grad):
        """Over a 4D tensor seen flattened (Flatten then softmax, as MobileNetV3's top):
        the (N, features) matrix in Keras's (H, W, C) order first, then the softmax over its
        features; the gradient goes back through the same reorder."""
        matrix, to_image = FlattenToMatrixOp(self.name).forward(builder, x, need_input_grad)
        output, backward = self.forward(builder, matrix, need_input_grad)

        def backward_flattened(output_grad):
            grad = backward(output_grad)
            return None if grad is None else to_image(grad)

        return output, backward_flattened
