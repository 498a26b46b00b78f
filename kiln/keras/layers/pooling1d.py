"""MaxPooling1D and AveragePooling1D layers (`keras.layers`): 2D pooling of window (1, size)
over the sequence seen as an image of height 1 (ops/sequence_as_image.py), no copy."""

from ...graph.symbolic import apply
from ...ops.conv2d import conv_output_length
from ...ops.pooling import Pooling2DOp
from ...ops.sequence_as_image import SequenceAsImageOp
from .. import backend
from .base_layer import Layer, check_choice
from .conv1d import single
from .sequences import check_sequence, steps_of


class _Pooling1D(Layer):
    mode = None

    def __init__(self, pool_size=2, strides=None, padding="valid", data_format=None, **kwargs):
        super().__init__(**kwargs)
        self.pool_size = single(pool_size, self.context, "pool_size")
        self.strides = self.pool_size if strides is None else single(strides, self.context,
                                                                     "strides")
        self.padding = check_choice(padding, ("valid", "same"), self.context, "padding")
        self.data_format = backend.normalize_data_format(data_format, self.context)
        self.op = SequenceAsImageOp(
            Pooling2DOp(self.name, self.mode, (1, *self.pool_size), (1, *self.strides),
                        self.padding), self.data_format, type(self).__name__)

    def build(self, input_shape):
        check_sequence(input_shape, self.context)
        steps = steps_of(input_shape, self.data_format)
        if conv_output_length(steps, self.pool_size[0], self.strides[0], self.padding) <= 0:
            raise ValueError(f"{self.context}: an input of {steps} steps is shorter than "
                             f"argument pool_size={self.pool_size[0]} (padding 'valid')")

    def call(self, inputs):
        return apply(self.op, inputs)

    def get_config(self):
        return {**super().get_config(), "pool_size": self.pool_size, "padding": self.padding,
                "strides": self.strides, "data_format": self.data_format}


class MaxPooling1D(_Pooling1D):
    """The maximum over windows of `pool_size` steps (gradient to the argmax).

    Args: pool_size (int; default 2, as in Keras 2: Keras 3 requires it for
    AveragePooling1D), strides (int, default pool_size), padding ('valid' / 'same'),
    data_format ((batch, steps, channels) for 'channels_last').

    Example:
        >>> x = MaxPooling1D(3)(Conv1D(8, 5, activation="relu")(Input((100, 16))))
    """

    mode = "max"


class AveragePooling1D(_Pooling1D):
    """The mean over windows of `pool_size` steps ('same' padding averages the real steps
    only, as Keras). Args: as MaxPooling1D."""

    mode = "avg"


MaxPool1D, AvgPool1D = MaxPooling1D, AveragePooling1D  # Keras's other spellings
__all__ = ["AveragePooling1D", "AvgPool1D", "MaxPool1D", "MaxPooling1D"]
