"""MaxPooling2D and AveragePooling2D layers (`keras.layers`)."""

from ... import ops
from ...graph.symbolic import apply
from .. import backend
from .base_layer import Layer, check_choice, pair


class _Pooling2D(Layer):
    mode = None

    def __init__(self, pool_size=(2, 2), strides=None, padding="valid", data_format=None,
                 **kwargs):
        super().__init__(**kwargs)
        self.pool_size = pair(pool_size, self.context, "pool_size")
        self.strides = self.pool_size if strides is None else pair(strides, self.context,
                                                                   "strides")
        for argument, value in (("pool_size", self.pool_size), ("strides", self.strides)):
            if min(value) <= 0:
                raise ValueError(f"{self.context}: argument {argument} must be ints > 0, got "
                                 f"{value}")
        self.padding = check_choice(padding, ("valid", "same"), self.context, "padding")
        self.data_format = backend.normalize_data_format(data_format, self.context)
        self.op = ops.Pooling2DOp(self.name, self.mode, self.pool_size, self.strides, self.padding)

    def build(self, input_shape):
        if len(input_shape) != 4:
            raise ValueError(f"{self.context}: expected a 4D input, got shape {input_shape}")

    def call(self, inputs):
        return apply(self.op, inputs)

    def get_config(self):
        return {**super().get_config(), "pool_size": self.pool_size, "strides": self.strides,
                "padding": self.padding, "data_format": self.data_format}


class MaxPooling2D(_Pooling2D):
    """Max pooling; keeps a workspace of argmax positions so backward is one pass.

    Args: pool_size, strides (default pool_size), padding ('valid'/'same'), data_format.
    """

    mode = "max"


class AveragePooling2D(_Pooling2D):
    """Average pooling ('same' padding excludes the padded cells, as in Keras)."""

    mode = "avg"


MaxPool2D, AvgPool2D = MaxPooling2D, AveragePooling2D  # Keras's other spellings
__all__ = ["AveragePooling2D", "AvgPool2D", "MaxPool2D", "MaxPooling2D"]

# Keras 2 imported the 1D and global poolings from `keras.layers.pooling` too.
from .global_pooling import (  # noqa: E402, F401
    GlobalAveragePooling2D,
    GlobalAvgPool2D,
    GlobalMaxPool2D,
    GlobalMaxPooling2D,
)
from .global_pooling1d import (  # noqa: E402, F401
    GlobalAveragePooling1D,
    GlobalAvgPool1D,
    GlobalMaxPool1D,
    GlobalMaxPooling1D,
)
from .pooling1d import AveragePooling1D, AvgPool1D, MaxPool1D, MaxPooling1D  # noqa: E402, F401
