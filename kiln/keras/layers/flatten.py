"""Flatten layer (`keras.layers.Flatten`): a view, no data moves."""

from ... import ops
from ...graph.symbolic import apply
from .. import backend
from .base_layer import Layer


class Flatten(Layer):
    """Args: data_format: how the input's axes are ordered; must match the input's. As in
    Keras, the features come out in (H, W, C) order in both formats (Keras transposes a
    channels_first input to channels_last first), so a Dense after it has the same weights in
    both formats."""

    def __init__(self, data_format=None, **kwargs):
        super().__init__(**kwargs)
        self.data_format = backend.normalize_data_format(data_format, self.context)
        self.op = ops.Flatten(self.name)

    def call(self, inputs):
        return apply(self.op, inputs, flattened=len(inputs.dims) == 4)

    def get_config(self):
        return {**super().get_config(), "data_format": self.data_format}
