"""A 2D op run on a sequence seen as an image of height 1: the Keras 1D layers (pooling, global
pooling, up-sampling, padding, cropping, spatial dropout, transposed convolution) and
RepeatVector, on the 2D ops' primitives.

A Keras sequence is 3D, (batch, steps, channels) or (batch, channels, steps), and its plain
bytes are already the 4D (N, C, 1, steps) tensor in nhwc or nchw: the op views them as such,
without a copy, and hands that view to the 2D op. A (batch, channels) matrix is (N, C, 1, 1)
the same way (RepeatVector). The 2D op's 4D output is reordered to the same plain layout (no
call when the op already wrote it there, as padding, cropping and dropout do) and viewed back
as 3D; a 2D output (global pooling without keepdims) is handed on as it is. Gradients come back
through the same views. Conv1DOp is this op around Conv2DOp, with the activations' layout
pinned to plain so that no reorder is ever needed.
"""

from ..binding import constants as dnnl
from ..binding.memory import MemoryDesc
from .base import Op
from .tensor import CHANNELS_LAST, Tensor


class SequenceAsImageOp(Op):
    """Args:
        image_op: the 2D op (its name is this op's name; its weights are this op's).
        data_format: how the 3D tensors order their axes ((N, T, C) for channels_last).
        kind: the Keras layer's name, for messages.
        input_rank: 3 for a sequence; 2 for a (batch, channels) matrix (RepeatVector).
    """

    def __init__(self, image_op, data_format=CHANNELS_LAST, kind="layer", input_rank=3):
        self.image_op = image_op
        self.name = image_op.name
        self.data_format = data_format
        self.kind = kind
        self.input_rank = input_rank
        self.tag = dnnl.acdb if data_format == CHANNELS_LAST else dnnl.abcd

    # -- the views ----------------------------------------------------------------------------
    def as_image(self, dims):
        if len(dims) == 2:
            n, channels = dims
            return (n, channels, 1, 1)
        if self.data_format == CHANNELS_LAST:
            n, steps, channels = dims
        else:
            n, channels, steps = dims
        return (n, channels, 1, steps)

    def as_sequence(self, dims):
        if len(dims) != 4:
            return tuple(dims)  # a (batch, channels) result stays one
        n, channels, _, steps = dims
        return (n, steps, channels) if self.data_format == CHANNELS_LAST else (n, channels, steps)

    def _check_rank(self, dims):
        if len(dims) != self.input_rank:
            expected = "3D (batch, steps, channels) or (batch, channels, steps)" if (
                self.input_rank == 3) else "2D (batch, features)"
            raise ValueError(f"{self.kind} '{self.name}': expected a {expected} input, got "
                             f"dims {tuple(dims)}")

    # -- shape rule ---------------------------------------------------------------------------
    def output_dims(self, input_dims):
        self._check_rank(input_dims)
        return self.as_sequence(self.image_op.output_dims(self.as_image(input_dims)))

    def parameter_dims(self, input_dims):
        return self.image_op.parameter_dims(self.as_image(input_dims))

    # -- forward and backward -----------------------------------------------------------------
    def forward(self, builder, x, need_input_grad=True):
        self._check_rank(x.dims)

        def image_view(memory, dims, label, backward=False):
            """`memory` (a sequence in any layout) reordered to plain (no call when it is),
            and the image view of those bytes."""
            own_type = memory.desc.data_type
            plain = builder.reorder(memory, MemoryDesc.with_tag(dims, own_type), label,
                                    backward=backward)
            return plain, builder.keep(plain).view(MemoryDesc.with_tag(
                self.as_image(dims), own_type, self.tag))

        def sequence_view(memory, dims, label, backward=False):
            """`memory` (an image in any layout) reordered to plain, seen as the sequence
            `dims`; (view, whether the view has bytes of its own)."""
            own_type = memory.desc.data_type
            plain = builder.reorder(memory, MemoryDesc.with_tag(self.as_image(dims), own_type,
                                                                self.tag),
                                    label, backward=backward)
            view = builder.keep(plain).view(MemoryDesc.with_tag(dims, own_type))
            return view, plain is not memory

        _, image = image_view(x.memory, x.dims, f"{self.name} input")
        inner_input = Tensor(image, self.data_format, activation=x.activation,
                             consumers=x.consumers)
        inner, image_backward = self.image_op.forward(builder, inner_input, need_input_grad)
        if inner is inner_input:
            # the identity (dropout outside training): the tensor itself, whose producer
            # then sees what its consumers do with its activation's derivative
            return x, lambda output_grad: output_grad
        # max pooling applies the producer's activation derivative to its own smaller gradient
        x.activation_grad_applied_downstream |= inner_input.activation_grad_applied_downstream
        out_dims = self.as_sequence(inner.dims)
        copied = False
        if len(inner.dims) == 4:
            output, copied = sequence_view(inner.memory, out_dims, f"{self.name} to plain")
        else:
            output = inner.memory

        def backward(output_grad):
            inner.activation_grad_applied_downstream = result.activation_grad_applied_downstream
            grad = output_grad
            if len(inner.dims) == 4:
                plain, grad = image_view(output_grad, out_dims, f"{self.name} output gradient",
                                         backward=True)
                if plain is output_grad and not builder.writable(output_grad):
                    builder.share(grad)  # a view of a gradient other consumers read too
            input_grad = image_backward(grad)
            if input_grad is None:
                return None
            view, own_bytes = sequence_view(input_grad, x.dims,
                                            f"{self.name} input gradient to plain", True)
            if not own_bytes and not builder.writable(input_grad):
                builder.share(view)  # the 2D op keeps those bytes (cropping's zero border)
            return view

        result = Tensor(output, x.data_format, activation=inner.activation,
                        backward_reads_memory=inner.backward_reads_memory and not copied)
        return result, backward
