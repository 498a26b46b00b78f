"""keras.ops.conv (keras.ops.nn.conv): a 1D, 2D or 3D convolution, the kernel's rank deciding,
as Keras 3 (kernel (spatial..., in_channels / groups, out_channels)). numpy eagerly; inside a
model, with a kernel weight from add_weight, the engine's Conv1DOp / Conv2DOp (oneDNN
convolution, the weight its kernel, so it trains); a 3D one inside a model is refused by name
(no engine op yet)."""

import numpy as np

from ...graph.symbolic import SymbolicTensor, apply
from ...ops.conv1d import Conv1DOp
from ...ops.conv2d import Conv2DOp
from .. import backend
from ..layers.custom_weights import bind_dims
from ..layers.weight import Weight
from .core import keras_array, not_in_model, result, where


def _tuple(value, argument, rank):
    """An int or a tuple of `rank` positive ints, as a tuple."""
    values = (value,) * rank if isinstance(value, (int, np.integer)) else tuple(value)
    if len(values) != rank or not all(isinstance(v, (int, np.integer)) and v > 0
                                      for v in values):
        raise ValueError(f"{where()}: keras.ops.conv argument {argument} must be a positive "
                         f"int or a tuple of {rank} of them for a {rank}D convolution, got "
                         f"{value!r}")
    return tuple(int(v) for v in values)


def _arguments(rank, strides, padding, data_format, dilation_rate):
    padding = str(padding).lower()
    if padding not in ("valid", "same"):
        raise ValueError(f"{where()}: keras.ops.conv argument padding must be 'valid' or "
                         f"'same', got {padding!r}")
    data_format = data_format or backend.image_data_format()
    if data_format not in ("channels_last", "channels_first"):
        raise ValueError(f"{where()}: keras.ops.conv argument data_format must be "
                         f"'channels_last' or 'channels_first', got {data_format!r}")
    return (_tuple(strides, "strides", rank), padding, data_format,
            _tuple(dilation_rate, "dilation_rate", rank))


def _spatial_rank(inputs, kernel):
    """The number of spatial axes, from the kernel (k..., in, out), as Keras: 1, 2 or 3."""
    rank = len(kernel.shape) - 2
    if rank not in (1, 2, 3) or len(inputs.shape) != rank + 2:
        raise ValueError(f"{where()}: keras.ops.conv expects a kernel of rank 3, 4 or 5 "
                         f"(spatial..., in_channels, out_channels) and an input of the same "
                         f"rank (batch, spatial..., channels), got shapes {tuple(inputs.shape)} "
                         f"and {tuple(kernel.shape)}")
    return rank


def _eager(x, kernel, strides, padding, channels_last, dilation):
    """The convolution in float64 numpy, over 1 to 3 spatial axes, with groups when the input
    has a multiple of the kernel's input channels (as Keras's feature_group_count)."""
    x = keras_array(x).astype(np.float64)
    kernel = keras_array(kernel).astype(np.float64)
    rank = kernel.ndim - 2
    if not channels_last:
        x = np.moveaxis(x, 1, -1)
    channels, per_group, filters = x.shape[-1], kernel.shape[-2], kernel.shape[-1]
    if channels % per_group or filters % (channels // per_group):
        raise ValueError(f"{where()}: keras.ops.conv: the input has {channels} channels, the "
                         f"kernel {kernel.shape} reads {per_group} per group; expected a "
                         f"multiple of it (and filters divisible by the groups)")
    groups = channels // per_group
    spans = [(k - 1) * d + 1 for k, d in zip(kernel.shape[:rank], dilation, strict=True)]
    sizes = x.shape[1:-1]
    if padding == "same":
        outs = [-(-n // s) for n, s in zip(sizes, strides, strict=True)]
        pads = [max((o - 1) * s + k - n, 0)
                for o, s, k, n in zip(outs, strides, spans, sizes, strict=True)]
        x = np.pad(x, [(0, 0), *[(p // 2, p - p // 2) for p in pads], (0, 0)])
    else:
        outs = [(n - k) // s + 1 for n, k, s in zip(sizes, spans, strides, strict=True)]
    if min(outs) < 1:
        raise ValueError(f"{where()}: keras.ops.conv: the input's spatial size {sizes} is "
                         f"smaller than the dilated kernel {tuple(spans)}")
    out = np.zeros((x.shape[0], *outs, filters), np.float64)
    per_group_out = filters // groups
    for offset in np.ndindex(*kernel.shape[:rank]):
        window = tuple(slice(i * d, i * d + (o - 1) * s + 1, s)
                       for i, d, o, s in zip(offset, dilation, outs, strides, strict=True))
        patch = x[(slice(None), *window)]
        for g in range(groups):
            taps = kernel[offset][:, g * per_group_out:(g + 1) * per_group_out]
            out[..., g * per_group_out:(g + 1) * per_group_out] += (
                patch[..., g * per_group:(g + 1) * per_group] @ taps)
    out = out.astype(np.float32)
    return result(out if channels_last else np.moveaxis(out, -1, 1))


def conv(inputs, kernel, strides=1, padding="valid", data_format=None, dilation_rate=1):
    """Keras 3's keras.ops.conv: 1D, 2D or 3D (the kernel's rank decides). Eagerly on arrays;
    inside a model (a kernel weight from add_weight) 1D and 2D are the engine's Conv1DOp /
    Conv2DOp, 3D has no engine op yet."""
    if not isinstance(inputs, SymbolicTensor):
        inputs = keras_array(inputs)
    if not isinstance(kernel, (SymbolicTensor, Weight)):
        kernel = keras_array(kernel)
    rank = _spatial_rank(inputs, kernel)
    strides, padding, data_format, dilation = _arguments(rank, strides, padding, data_format,
                                                         dilation_rate)
    if isinstance(inputs, SymbolicTensor):
        if not isinstance(kernel, Weight):
            not_in_model("conv", "the kernel must be a weight from add_weight")
        if rank == 3 or inputs.flattened:
            not_in_model("conv", f"of shapes {inputs.shape} and {kernel.shape}; 1D and 2D "
                                 "convolutions are planned, 3D ones only eagerly")
        return _symbolic(inputs, kernel, rank, strides, padding, data_format, dilation)
    if isinstance(kernel, SymbolicTensor):
        not_in_model("conv", "the kernel must be a weight from add_weight")
    return _eager(inputs, kernel, strides, padding, data_format == "channels_last", dilation)


def _symbolic(inputs, kernel, rank, strides, padding, data_format, dilation):
    """The engine op of a 1D or 2D convolution with `kernel` (a weight) as its kernel."""
    if rank == 2:
        inputs.read_as(data_format, where())
        channels = inputs.dims[1]
    else:
        channels = inputs.shape[-1 if data_format == "channels_last" else 1]
    per_group, filters = kernel.shape[-2], kernel.shape[-1]
    if channels % per_group or filters % (channels // per_group):
        raise ValueError(f"{where()}: keras.ops.conv: the kernel {kernel.shape} expects "
                         f"{per_group} input channels (per group), the input {inputs.shape} "
                         f"has {channels}")
    groups = channels // per_group
    owner, short = kernel.path.rsplit("/", 1)
    if rank == 2:
        op = Conv2DOp(owner, filters, kernel.shape[:2], strides, padding, use_bias=False,
                      dilation_rate=dilation, groups=groups, kernel_name=short)
        dims, tag = op.parameter_dims(inputs.dims)[short]
    else:
        op = Conv1DOp(owner, filters, kernel.shape[0], strides[0], padding, use_bias=False,
                      dilation_rate=dilation[0], groups=groups, data_format=data_format,
                      kernel_name=short)
        dims, tag = op.parameter_dims(inputs.dims)[short]
    bind_dims(kernel, dims, tag, where())
    return apply(op, inputs)
