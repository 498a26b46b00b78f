"""Cropping2D layer (`keras.layers.Cropping2D`): removes rows and columns at the image borders
(a oneDNN reorder out of a window of the input)."""

from ...graph.symbolic import apply
from ...ops.pad_crop import Cropping2DOp
from .. import backend
from .base_layer import Layer
from .zero_padding2d import spatial_pairs


class Cropping2D(Layer):
    """Args: cropping (int, (rows, columns) or ((top, bottom), (left, right)); default no
    cropping), data_format."""

    def __init__(self, cropping=((0, 0), (0, 0)), data_format=None, **kwargs):
        super().__init__(**kwargs)
        self.cropping = spatial_pairs(cropping, self.context, "cropping")
        self.data_format = backend.normalize_data_format(data_format, self.context)
        self.op = Cropping2DOp(self.name, self.cropping)

    def build(self, input_shape):
        if len(input_shape) != 4:
            raise ValueError(f"{self.context}: expected a 4D input, got shape {input_shape}")

    def call(self, inputs):
        return apply(self.op, inputs)

    def get_config(self):
        return {**super().get_config(), "cropping": self.cropping,
                "data_format": self.data_format}
