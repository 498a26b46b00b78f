"""1D convolution (Keras Conv1D) as a 2D convolution of height 1.

A Keras 1D tensor is 3D: (batch, steps, channels) or (batch, channels, steps). Its plain bytes
are already a 4D (N, C, 1, steps) tensor in nhwc (channels_last) or nchw (channels_first), so
the op views them as such, without a copy, and runs Conv2DOp's primitives on the view
(SequenceAsImageOp, sequence_as_image.py). The activations' layout is pinned to that plain one
(the weights stay `format_tag any`), so the output is viewed back as 3D without a reorder; an
input in another layout (a producer that chose a blocked one) is reordered to plain first.
"""

from ..binding import constants as dnnl
from .conv2d import Conv2DOp
from .sequence_as_image import SequenceAsImageOp
from .tensor import CHANNELS_LAST


class Conv1DOp(SequenceAsImageOp):
    """Args: name, filters, kernel_size, strides, padding ('valid', 'same', 'causal'),
    activation (None or fusable), use_bias, dilation_rate, groups (ints), data_format (how the
    3D tensors order their axes), kernel_name (the kernel's short name: SeparableConv1D's
    'depthwise_kernel' and 'pointwise_kernel'). The Keras kernel (k, in/g, out) is the 2D
    op's (1, k, in/g, out); DepthwiseConv1D's (k, in, multiplier) is the same bytes with
    groups = in."""

    def __init__(self, name, filters, kernel_size, strides=1, padding="valid", activation=None,
                 use_bias=True, dilation_rate=1, groups=1, data_format=CHANNELS_LAST,
                 kernel_name="kernel"):
        tag = dnnl.acdb if data_format == CHANNELS_LAST else dnnl.abcd
        super().__init__(Conv2DOp(name, filters, (1, kernel_size), (1, strides), padding,
                                  activation, use_bias, (1, dilation_rate), groups,
                                  kernel_name=kernel_name, activation_tag=tag),
                         data_format, "Conv1D")

    @property
    def conv(self):
        return self.image_op

    @property
    def activation(self):
        return self.image_op.activation
