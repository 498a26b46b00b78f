"""ZeroPadding2D layer (`keras.layers.ZeroPadding2D`): rows and columns of zeros around each
image (a oneDNN reorder into the interior of a zeroed buffer)."""

from ...graph.symbolic import apply
from ...ops.pad_crop import ZeroPadding2DOp
from .. import backend
from .arguments import is_integer
from .base_layer import Layer


def spatial_pairs(value, context, argument):
    """Keras's int / (rows, columns) / ((top, bottom), (left, right)) -> the last form, each
    amount an int >= 0."""
    if is_integer(value):
        pairs = ((value, value), (value, value))
    elif isinstance(value, (list, tuple)) and len(value) == 2 and all(
            is_integer(v) for v in value):
        pairs = ((value[0], value[0]), (value[1], value[1]))
    elif isinstance(value, (list, tuple)) and len(value) == 2 and all(
            isinstance(v, (list, tuple)) and len(v) == 2 and all(is_integer(a) for a in v)
            for v in value):
        pairs = tuple(tuple(v) for v in value)
    else:
        raise ValueError(f"{context}: argument {argument} must be an int, a pair of ints or a "
                         f"pair of pairs of ints ((top, bottom), (left, right)), got {value!r}")
    if any(a < 0 for pair in pairs for a in pair):
        raise ValueError(f"{context}: argument {argument} must not be negative, got {value!r}")
    return tuple((int(a), int(b)) for a, b in pairs)


class ZeroPadding2D(Layer):
    """Args: padding (int, (rows, columns) or ((top, bottom), (left, right)); default 1),
    data_format."""

    def __init__(self, padding=(1, 1), data_format=None, **kwargs):
        super().__init__(**kwargs)
        self.padding = spatial_pairs(padding, self.context, "padding")
        self.data_format = backend.normalize_data_format(data_format, self.context)
        self.op = ZeroPadding2DOp(self.name, self.padding)

    def build(self, input_shape):
        if len(input_shape) != 4:
            raise ValueError(f"{self.context}: expected a 4D input, got shape {input_shape}")

    def call(self, inputs):
        return apply(self.op, inputs)

    def get_config(self):
        return {**super().get_config(), "padding": self.padding,
                "data_format": self.data_format}
