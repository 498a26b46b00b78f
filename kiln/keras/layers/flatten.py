"""Flatten layer (`keras.layers.Flatten`): a view, no data moves."""

from ... import ops
from ...graph.symbolic import apply
from ...ops.permute import PermuteOp
from ...ops.reshape import ReshapeOp
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
        self.op = ops.FlattenOp(self.name)

    def call(self, inputs):
        rank = len(inputs.shape)
        if rank == 4 or rank <= 2:
            return apply(self.op, inputs, flattened=rank == 4)
        # a sequence (Conv1D's (batch, steps, channels)): a real reshape in Keras's row-major
        # order, after Keras's own transpose to channels_last for a channels_first layer (the
        # free view above is only for images, whose Dense reads the 4D layout)
        x = inputs
        if self.data_format == "channels_first":
            x = apply(PermuteOp(f"{self.name}_to_channels_last", (*range(2, rank), 1),
                                inputs.data_format), x)
        return apply(ReshapeOp(self.name, (-1,), x.data_format, False), x, flattened=False)

    def get_config(self):
        return {**super().get_config(), "data_format": self.data_format}
