"""A cross-entropy on an image output (a segmentation map): the head reads it as one row of
class scores per pixel, (N*H*W, classes), and each row's weight is its pixel's sample weight.

Keras reduces the loss over every element of its loss tensor, (batch, H, W): the mean over
N*H*W rows, which is what a head computes on the rows. Keras 3 multiplies that tensor by the
sample weights as they are, so they are per pixel, (batch, H, W) (a (batch,) array does not
broadcast against it). The classes are the oneDNN channel axis in both data formats (the last
Keras axis of a channels_last output, axis 1 of a channels_first one), so the rows are the
output's plain nhwc bytes and the gradient rows are the nhwc gradient. One-hot labels of a
channels_first output, (batch, classes, H, W) in Keras' order, are a transposed view of the row
buffer: the trainer's copy into it is the only transposition, no step reorders labels.
"""

import numpy as np

from ..binding import constants as dnnl
from ..binding.memory import Memory, MemoryDesc
from ..ops.tensor import CHANNELS_FIRST, Tensor


def reads_pixels(head, tensor):
    """Whether `head` reads the output Tensor / SymbolicTensor `tensor` as rows per pixel."""
    return head.class_rows and len(tensor.dims) == 4 and not tensor.flattened


def pixel_buffers(head, tensor, batch_size):
    """(labels in the Keras shape, the same bytes as rows, sample weights (batch, H, W)) for
    `head` on the image output `tensor` (logical dims (None, classes, H, W))."""
    classes, height, width = tensor.dims[1:]
    rows = batch_size * height * width
    if head.sparse:  # class ids (batch, H, W) in both data formats
        row_labels = np.zeros(rows, np.float32)
        labels = row_labels.reshape(batch_size, height, width)
    else:
        row_labels = np.zeros((rows, classes), np.float32)
        labels = row_labels.reshape(batch_size, height, width, classes)
        if tensor.data_format == CHANNELS_FIRST:
            labels = labels.transpose(0, 3, 1, 2)
    return labels, row_labels, np.ones((batch_size, height, width), np.float32)


def pixel_rows(builder, view, x):
    """The image output Tensor `x` as a plain (N*H*W, classes) Tensor of head `view`."""
    n, classes, height, width = x.dims
    plain = builder.keep(builder.reorder(x.memory, MemoryDesc.with_tag(x.dims, dnnl.f32,
                                                                       dnnl.acdb),
                                         f"{view.loss.head.name} output to rows"))
    rows = MemoryDesc.with_tag((n * height * width, classes), dnnl.f32, dnnl.ab)
    return Tensor(plain.view(rows), x.data_format)


def as_image(grad, dims):
    """The head's (N*H*W, classes) gradient rows as the gradient of the image (dims (N, C,
    H, W)): the same bytes, nhwc."""
    return Memory(MemoryDesc.with_tag(dims, dnnl.f32, dnnl.acdb), grad.storage)
