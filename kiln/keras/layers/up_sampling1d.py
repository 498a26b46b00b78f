"""UpSampling1D layer (`keras.layers.UpSampling1D`): each step repeated `size` times (oneDNN
nearest resampling of the sequence seen as an image of height 1, ops/sequence_as_image.py)."""

from ...graph.symbolic import apply
from ...ops.resize import UpSampling2DOp
from ...ops.sequence_as_image import SequenceAsImageOp
from ...ops.tensor import CHANNELS_LAST
from .base_layer import Layer
from .sequences import check_sequence, positive_count


class UpSampling1D(Layer):
    """Args: size (int > 0, default 2): how many times each step is repeated along axis 1
    (Keras's layer has no data_format: axis 1 is the steps).

    Example:
        >>> x = UpSampling1D(3)(Input((10, 4)))  # -> (None, 30, 4)
    """

    def __init__(self, size=2, **kwargs):
        super().__init__(**kwargs)
        self.size = positive_count(size, self.context, "size")
        self.op = SequenceAsImageOp(UpSampling2DOp(self.name, (1, self.size)), CHANNELS_LAST,
                                    "UpSampling1D")

    def build(self, input_shape):
        check_sequence(input_shape, self.context)

    def call(self, inputs):
        return apply(self.op, inputs)

    def get_config(self):
        return {**super().get_config(), "size": self.size}
