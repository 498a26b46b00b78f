"""ZeroPadding1D layer (`keras.layers.ZeroPadding1D`): steps of zeros before and after each
sequence (ZeroPadding2D's reorder into a zeroed buffer, on the sequence seen as an image of
height 1, ops/sequence_as_image.py)."""

from ...graph.symbolic import apply
from ...ops.pad_crop import ZeroPadding2DOp
from ...ops.sequence_as_image import SequenceAsImageOp
from .. import backend
from .base_layer import Layer
from .sequences import check_sequence, left_and_right


class ZeroPadding1D(Layer):
    """Args: padding (int or (left, right) steps, default 1), data_format.

    Example:
        >>> x = ZeroPadding1D((2, 0))(Input((10, 4)))  # -> (None, 12, 4)
    """

    def __init__(self, padding=1, data_format=None, **kwargs):
        super().__init__(**kwargs)
        self.padding = left_and_right(padding, self.context, "padding")
        self.data_format = backend.normalize_data_format(data_format, self.context)
        self.op = SequenceAsImageOp(ZeroPadding2DOp(self.name, ((0, 0), self.padding)),
                                    self.data_format, "ZeroPadding1D")

    def build(self, input_shape):
        check_sequence(input_shape, self.context)

    def call(self, inputs):
        return apply(self.op, inputs)

    def get_config(self):
        return {**super().get_config(), "padding": self.padding,
                "data_format": self.data_format}
