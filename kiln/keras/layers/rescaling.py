"""Rescaling layer (`keras.layers.Rescaling`): x * scale + offset. Numbers run as one oneDNN
eltwise linear; arrays (one value per channel, e.g. EfficientNet's 1 / std per color) as the
broadcasting binary ops of `keras.ops.multiply` / `add`, with the values held by the plan."""

import numbers

import numpy as np

from ...graph.symbolic import apply
from ...ops.rescaling import RescalingOp
from .. import backend
from .base_layer import Layer


def _is_number(value):
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


class Rescaling(Layer):
    """Args: scale, offset (floats, or arrays broadcast against the input as numpy does:
    a list of C values scales each channel)."""

    supports_masking = True  # the output carries the input's mask, as Keras

    def __init__(self, scale, offset=0.0, **kwargs):
        super().__init__(**kwargs)
        for argument, value in (("scale", scale), ("offset", offset)):
            if not _is_number(value) and not self._is_array(value):
                raise ValueError(f"{self.context}: argument {argument} must be a float or an "
                                 f"array of floats, got {value!r}")
        self.scale, self.offset = scale, offset
        self.op = (RescalingOp(self.name, scale, offset)
                   if _is_number(scale) and _is_number(offset) else None)

    @staticmethod
    def _is_array(value):
        try:
            array = np.asarray(value)
        except (TypeError, ValueError):
            return False
        return array.dtype.kind in "iuf" and array.ndim > 0

    def _operand(self, value, reshape=False):
        """The array as Keras uses it: with channels_first, Keras appends axes to the scale
        (not to the offset) so that it reaches the channels."""
        array = np.asarray(value, np.float32)
        if reshape and array.ndim > 0 and backend.image_data_format() == "channels_first":
            array = array.reshape(array.shape + (1,) * (3 - array.ndim))
        return array

    def call(self, inputs):
        if self.op is not None:
            return apply(self.op, inputs)
        from .. import ops

        outputs = ops.multiply(inputs, self._operand(self.scale, reshape=True))
        if not (_is_number(self.offset) and self.offset == 0):
            outputs = ops.add(outputs, self._operand(self.offset))
        return outputs

    def get_config(self):
        def listed(value):
            return value.tolist() if isinstance(value, np.ndarray) else value

        return {**super().get_config(), "scale": listed(self.scale),
                "offset": listed(self.offset)}
