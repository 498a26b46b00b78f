"""1D convolution (Keras Conv1D) as a 2D convolution of height 1.

A Keras 1D tensor is 3D: (batch, steps, channels) or (batch, channels, steps). Its plain bytes
are already a 4D (N, C, 1, steps) tensor in nhwc (channels_last) or nchw (channels_first), so
the op views them as such, without a copy, and runs Conv2DOp's primitives with the activations
in that plain layout (the weights stay `format_tag any`); the output is viewed back as 3D. An
input in another layout (a producer that chose a blocked one) is reordered to plain first.
"""

from ..binding import constants as dnnl
from ..binding.memory import MemoryDesc
from .base import Op
from .conv2d import Conv2DOp
from .tensor import CHANNELS_LAST, Tensor


class Conv1DOp(Op):
    """Args: name, filters, kernel_size, strides, padding ('valid', 'same', 'causal'),
    activation (None or fusable), use_bias, dilation_rate, groups (ints), data_format (how the
    3D tensors order their axes), kernel_name (the kernel's short name: SeparableConv1D's
    'depthwise_kernel' and 'pointwise_kernel'). The Keras kernel (k, in/g, out) is the 2D
    op's (1, k, in/g, out); DepthwiseConv1D's (k, in, multiplier) is the same bytes with
    groups = in."""

    def __init__(self, name, filters, kernel_size, strides=1, padding="valid", activation=None,
                 use_bias=True, dilation_rate=1, groups=1, data_format=CHANNELS_LAST,
                 kernel_name="kernel"):
        self.name = name
        self.data_format = data_format
        tag = dnnl.acdb if data_format == CHANNELS_LAST else dnnl.abcd
        self.conv = Conv2DOp(name, filters, (1, kernel_size), (1, strides), padding, activation,
                             use_bias, (1, dilation_rate), groups, kernel_name=kernel_name,
                             activation_tag=tag)

    @property
    def activation(self):
        return self.conv.activation

    def _as_4d(self, dims):
        if self.data_format == CHANNELS_LAST:
            n, steps, channels = dims
        else:
            n, channels, steps = dims
        return (n, channels, 1, steps)

    def _as_3d(self, dims):
        n, channels, _, steps = dims
        return (n, steps, channels) if self.data_format == CHANNELS_LAST else (n, channels, steps)

    def output_dims(self, input_dims):
        if len(input_dims) != 3:
            raise ValueError(f"Conv1D '{self.name}': expected a 3D input, got dims "
                             f"{tuple(input_dims)}")
        return self._as_3d(self.conv.output_dims(self._as_4d(input_dims)))

    def parameter_dims(self, input_dims):
        return self.conv.parameter_dims(self._as_4d(input_dims))

    def forward(self, builder, x, need_input_grad=True):
        dt = builder.data_type
        dims4 = self._as_4d(x.dims)
        tag = self.conv.activation_tag

        def plain_view(memory, dims3, label):
            """`memory` (3D, any layout) as the 4D view of its plain bytes."""
            plain = builder.reorder(memory, MemoryDesc.with_tag(dims3, dt), label,
                                    backward=label.endswith("gradient"))
            return plain.view(MemoryDesc.with_tag(self._as_4d(dims3), dt, tag))

        inner = Tensor(plain_view(x.memory, x.dims, f"{self.name} input"), x.data_format)
        inner, backward4 = self.conv.forward(builder, inner, need_input_grad)
        out_dims = self._as_3d(inner.dims)
        # views keep their bytes: liveness sharing moves only buffers no view reads
        output = builder.keep(inner.memory).view(MemoryDesc.with_tag(out_dims, dt))

        def backward(output_grad):
            inner.activation_grad_applied_downstream = result.activation_grad_applied_downstream
            grad4 = plain_view(output_grad, out_dims, f"{self.name} output gradient")
            if not builder.writable(output_grad):
                builder.share(grad4)  # a view of a gradient other consumers read too
            grad = backward4(grad4)
            if grad is None:
                return None
            grad = builder.reorder(grad, MemoryDesc.with_tag(dims4, dt, tag),
                                   f"{self.name} input gradient to plain", backward=True)
            return builder.keep(grad).view(MemoryDesc.with_tag(x.dims, dt))

        result = Tensor(output, x.data_format, activation=self.activation,
                        backward_reads_memory=False)
        return result, backward
