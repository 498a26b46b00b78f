"""Rescaling layer (`keras.layers.Rescaling`): x * scale + offset (oneDNN eltwise linear)."""

import numbers

from ...graph.symbolic import apply
from ...ops.rescaling import RescalingOp
from .base_layer import Layer


class Rescaling(Layer):
    """Args: scale, offset (floats; Keras's per-channel arrays are not supported yet)."""

    supports_masking = True  # the output carries the input's mask, as Keras

    def __init__(self, scale, offset=0.0, **kwargs):
        super().__init__(**kwargs)
        for argument, value in (("scale", scale), ("offset", offset)):
            if not isinstance(value, numbers.Real) or isinstance(value, bool):
                raise ValueError(f"{self.context}: argument {argument} must be a float "
                                 f"(per-channel arrays are not supported yet), got {value!r}")
        self.scale, self.offset = scale, offset
        self.op = RescalingOp(self.name, scale, offset)

    def call(self, inputs):
        return apply(self.op, inputs)

    def get_config(self):
        return {**super().get_config(), "scale": self.scale, "offset": self.offset}
