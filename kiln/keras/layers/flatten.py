"""Flatten layer (`keras.layers.Flatten`): a view, no data moves."""

from ... import ops
from ...graph.symbolic import apply
from .. import backend
from .base_layer import Layer


class Flatten(Layer):
    """Args: data_format: the feature order of the result, as in Keras (H, W, C) for
    channels_last and (C, H, W) for channels_first; must match the input's."""

    def __init__(self, data_format=None, **kwargs):
        super().__init__(**kwargs)
        self.data_format = backend.normalize_data_format(data_format, self.context)
        self.op = ops.Flatten(self.name)

    def call(self, inputs):
        if len(inputs.dims) == 4 and inputs.data_format != self.data_format:
            raise ValueError(f"{self.context}: data_format {self.data_format!r} differs from "
                             f"its input's {inputs.data_format!r}")
        return apply(self.op, inputs, flattened=len(inputs.dims) == 4)

    def get_config(self):
        return {**super().get_config(), "data_format": self.data_format}
