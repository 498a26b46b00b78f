"""keras.ops.max_pool / average_pool over the two spatial axes of an image tensor: numpy
eagerly, the engine's Pooling2DOp (oneDNN pooling) inside a model. Average pooling with
'same' padding divides by the number of values inside the image, as Keras does."""

import numpy as np

from ...graph.symbolic import SymbolicTensor, apply
from ...ops.pooling import Pooling2DOp
from .. import backend
from .core import keras_array, not_in_model, op_name, result, where


def _pair(value, argument, function):
    values = (value, value) if isinstance(value, int) else tuple(value)
    if len(values) != 2 or not all(isinstance(v, int) and v > 0 for v in values):
        raise ValueError(f"{where()}: keras.ops.{function} argument {argument} must be a "
                         f"positive int or a pair of them, got {value!r}")
    return values


def _arguments(function, pool_size, strides, padding, data_format):
    size = _pair(pool_size, "pool_size", function)
    step = size if strides is None else _pair(strides, "strides", function)
    padding = str(padding).lower()
    if padding not in ("valid", "same"):
        raise ValueError(f"{where()}: keras.ops.{function} argument padding must be 'valid' "
                         f"or 'same', got {padding!r}")
    data_format = data_format or backend.image_data_format()
    return size, step, padding, data_format


def _eager(mode, x, size, step, padding, channels_last):
    x = keras_array(x).astype(np.float32)
    if x.ndim != 4:
        raise ValueError(f"keras.ops pooling: expected a 4D input, got shape {x.shape}")
    if not channels_last:
        x = x.transpose(0, 2, 3, 1)
    n, h, w, c = x.shape
    if padding == "same":
        out_h, out_w = -(-h // step[0]), -(-w // step[1])
        pad_h = max((out_h - 1) * step[0] + size[0] - h, 0)
        pad_w = max((out_w - 1) * step[1] + size[1] - w, 0)
        pads = ((0, 0), (pad_h // 2, pad_h - pad_h // 2), (pad_w // 2, pad_w - pad_w // 2),
                (0, 0))
    else:
        out_h, out_w = (h - size[0]) // step[0] + 1, (w - size[1]) // step[1] + 1
        pads = ((0, 0),) * 4
    fill = -np.inf if mode == "max" else 0.0
    padded = np.pad(x, pads, constant_values=fill)
    inside = np.pad(np.ones((1, h, w, 1), np.float32), pads)
    out = np.empty((n, out_h, out_w, c), np.float32)
    for i in range(out_h):
        for j in range(out_w):
            rows = slice(i * step[0], i * step[0] + size[0])
            cols = slice(j * step[1], j * step[1] + size[1])
            window = padded[:, rows, cols, :]
            if mode == "max":
                out[:, i, j, :] = window.max(axis=(1, 2))
            else:
                out[:, i, j, :] = window.sum(axis=(1, 2)) / inside[:, rows, cols, :].sum()
    return result(out if channels_last else out.transpose(0, 3, 1, 2))


def _pool(mode, function):
    def run(inputs, pool_size, strides=None, padding="valid", data_format=None):
        size, step, padding, data_format = _arguments(function, pool_size, strides, padding,
                                                      data_format)
        if isinstance(inputs, SymbolicTensor):
            if len(inputs.shape) != 4 or inputs.flattened:
                not_in_model(function, f"on shape {inputs.shape}; 2D pooling of a 4D image "
                                       "tensor is planned")
            inputs.read_as(data_format, where())
            return apply(Pooling2DOp(op_name(function), mode, size, step, padding), inputs)
        return _eager(mode, inputs, size, step, padding, data_format == "channels_last")

    run.__name__ = function
    return run


max_pool = _pool("max", "max_pool")
average_pool = _pool("avg", "average_pool")
