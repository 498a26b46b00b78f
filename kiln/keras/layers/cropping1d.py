"""Cropping1D layer (`keras.layers.Cropping1D`): steps removed at the start and the end of
each sequence (Cropping2D's reorder out of a window, on the sequence seen as an image of height
1, ops/sequence_as_image.py)."""

from ...graph.symbolic import apply
from ...ops.pad_crop import Cropping2DOp
from ...ops.sequence_as_image import SequenceAsImageOp
from ...ops.tensor import CHANNELS_LAST
from .base_layer import Layer
from .sequences import check_sequence, left_and_right


class Cropping1D(Layer):
    """Args: cropping (int or (start, end) steps, default (1, 1)); axis 1 is the steps
    (Keras's layer has no data_format).

    Example:
        >>> x = Cropping1D((2, 1))(Input((10, 4)))  # -> (None, 7, 4)
    """

    def __init__(self, cropping=(1, 1), **kwargs):
        super().__init__(**kwargs)
        self.cropping = left_and_right(cropping, self.context, "cropping")
        self.op = SequenceAsImageOp(Cropping2DOp(self.name, ((0, 0), self.cropping)),
                                    CHANNELS_LAST, "Cropping1D")

    def build(self, input_shape):
        check_sequence(input_shape, self.context)
        steps = input_shape[1]
        if sum(self.cropping) >= steps:
            raise ValueError(f"{self.context}: argument cropping={self.cropping} must remove "
                             f"fewer than the input's {steps} steps")

    def call(self, inputs):
        return apply(self.op, inputs)

    def get_config(self):
        return {**super().get_config(), "cropping": self.cropping}
