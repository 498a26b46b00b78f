"""keras.ops.conv (keras.ops.nn.conv) of an image tensor with a (kh, kw, in, out) kernel:
numpy eagerly; inside a model, with a kernel weight from add_weight, the engine's Conv2DOp
(oneDNN convolution, the weight its kernel, so it trains)."""

import numpy as np

from ...graph.symbolic import SymbolicTensor, apply
from ...ops.conv2d import Conv2DOp
from .. import backend
from ..layers.custom_weights import bind_dims
from ..layers.weight import Weight
from .core import keras_array, not_in_model, result, where
from .pooling import _pair


def _arguments(strides, padding, data_format, dilation_rate):
    padding = str(padding).lower()
    if padding not in ("valid", "same"):
        raise ValueError(f"{where()}: keras.ops.conv argument padding must be 'valid' or "
                         f"'same', got {padding!r}")
    return (_pair(strides, "strides", "conv"), padding,
            data_format or backend.image_data_format(),
            _pair(dilation_rate, "dilation_rate", "conv"))


def _eager(x, kernel, strides, padding, channels_last, dilation):
    x = keras_array(x).astype(np.float32)
    kernel = keras_array(kernel).astype(np.float32)
    if x.ndim != 4 or kernel.ndim != 4:
        raise ValueError(f"keras.ops.conv: expected a 4D input and a 4D kernel, got shapes "
                         f"{x.shape} and {kernel.shape}")
    if not channels_last:
        x = x.transpose(0, 2, 3, 1)
    kh, kw = ((k - 1) * d + 1 for k, d in zip(kernel.shape[:2], dilation, strict=True))
    h, w = x.shape[1:3]
    if padding == "same":
        out_h, out_w = -(-h // strides[0]), -(-w // strides[1])
        pad_h = max((out_h - 1) * strides[0] + kh - h, 0)
        pad_w = max((out_w - 1) * strides[1] + kw - w, 0)
        x = np.pad(x, ((0, 0), (pad_h // 2, pad_h - pad_h // 2),
                       (pad_w // 2, pad_w - pad_w // 2), (0, 0)))
    else:
        out_h, out_w = (h - kh) // strides[0] + 1, (w - kw) // strides[1] + 1
    out = np.zeros((x.shape[0], out_h, out_w, kernel.shape[3]), np.float64)
    for i in range(kernel.shape[0]):
        for j in range(kernel.shape[1]):
            rows = slice(i * dilation[0], i * dilation[0] + (out_h - 1) * strides[0] + 1,
                         strides[0])
            cols = slice(j * dilation[1], j * dilation[1] + (out_w - 1) * strides[1] + 1,
                         strides[1])
            out += np.einsum("nhwc,co->nhwo", x[:, rows, cols, :], kernel[i, j])
    out = out.astype(np.float32)
    return result(out if channels_last else out.transpose(0, 3, 1, 2))


def conv(inputs, kernel, strides=1, padding="valid", data_format=None, dilation_rate=1):
    strides, padding, data_format, dilation = _arguments(strides, padding, data_format,
                                                         dilation_rate)
    if isinstance(inputs, SymbolicTensor):
        if not isinstance(kernel, Weight):
            not_in_model("conv", "the kernel must be a weight from add_weight")
        if len(inputs.shape) != 4 or len(kernel.shape) != 4 or inputs.flattened:
            not_in_model("conv", f"of shapes {inputs.shape} and {kernel.shape}; a 4D image "
                                 "tensor and a (kh, kw, in, out) kernel are planned")
        inputs.read_as(data_format, where())
        channels = inputs.dims[1]
        if kernel.shape[2] != channels:
            raise ValueError(f"{where()}: keras.ops.conv: the kernel {kernel.shape} expects "
                             f"{kernel.shape[2]} input channels, the input {inputs.shape} "
                             f"has {channels}")
        owner, short = kernel.path.rsplit("/", 1)
        op = Conv2DOp(owner, kernel.shape[3], kernel.shape[:2], strides, padding,
                      use_bias=False, dilation_rate=dilation, kernel_name=short)
        dims, tag = op.parameter_dims(inputs.dims)[short]
        bind_dims(kernel, dims, tag, where())
        return apply(op, inputs)
    if isinstance(kernel, SymbolicTensor):
        not_in_model("conv", "the kernel must be a weight from add_weight")
    return _eager(inputs, kernel, strides, padding, data_format == "channels_last", dilation)
