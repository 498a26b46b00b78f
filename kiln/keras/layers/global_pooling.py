"""GlobalAveragePooling2D and GlobalMaxPooling2D layers (`keras.layers`)."""

from ...graph.symbolic import apply
from ...ops.global_pooling import GlobalPooling2DOp
from .. import backend
from .base_layer import Layer


class _GlobalPooling2D(Layer):
    mode = None

    def __init__(self, data_format=None, keepdims=False, **kwargs):
        super().__init__(**kwargs)
        self.data_format = backend.normalize_data_format(data_format, self.context)
        if not isinstance(keepdims, bool):
            raise ValueError(f"{self.context}: argument keepdims must be True or False, got "
                             f"{keepdims!r}")
        self.keepdims = keepdims
        self.op = GlobalPooling2DOp(self.name, self.mode, keepdims)

    def build(self, input_shape):
        if len(input_shape) != 4:
            raise ValueError(f"{self.context}: expected a 4D input, got shape {input_shape}")

    def call(self, inputs):
        return apply(self.op, inputs)

    def get_config(self):
        return {**super().get_config(), "data_format": self.data_format,
                "keepdims": self.keepdims}


class GlobalAveragePooling2D(_GlobalPooling2D):
    """The mean of each channel over height and width: (N, C), or (N, 1, 1, C) /
    (N, C, 1, 1) with keepdims. Args: data_format, keepdims (default False)."""

    mode = "avg"


class GlobalMaxPooling2D(_GlobalPooling2D):
    """The maximum of each channel over height and width (gradient to the argmax).
    Args: data_format, keepdims (default False)."""

    mode = "max"


GlobalAvgPool2D, GlobalMaxPool2D = GlobalAveragePooling2D, GlobalMaxPooling2D  # other spellings
__all__ = ["GlobalAveragePooling2D", "GlobalAvgPool2D", "GlobalMaxPool2D", "GlobalMaxPooling2D"]
