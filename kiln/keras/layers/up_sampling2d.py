"""UpSampling2D layer (`keras.layers.UpSampling2D`): each image enlarged by integer factors
(oneDNN resampling, nearest or bilinear)."""

from ...graph.symbolic import apply
from ...ops.resize import ALGORITHMS, UpSampling2DOp
from .. import backend
from .base_layer import Layer, pair

KERAS_INTERPOLATIONS = ("area", "bicubic", "bilinear", "lanczos3", "lanczos5", "nearest")


class UpSampling2D(Layer):
    """Args: size (int or (rows, columns) factors > 0; default 2), data_format,
    interpolation ('nearest' or 'bilinear'; Keras's 'bicubic', 'area', 'lanczos3' and
    'lanczos5' are not supported yet)."""

    def __init__(self, size=(2, 2), data_format=None, interpolation="nearest", **kwargs):
        super().__init__(**kwargs)
        self.size = pair(size, self.context, "size")
        if min(self.size) <= 0:
            raise ValueError(f"{self.context}: argument size must be ints > 0, got {size!r}")
        self.data_format = backend.normalize_data_format(data_format, self.context)
        if interpolation not in ALGORITHMS:
            known = interpolation in KERAS_INTERPOLATIONS
            raise ValueError(f"{self.context}: argument interpolation must be one of "
                             f"{sorted(ALGORITHMS)}" + (" (kiln has no oneDNN algorithm for "
                                                        f"{interpolation!r} yet)" if known else
                                                        "") + f", got {interpolation!r}")
        self.interpolation = interpolation
        self.op = UpSampling2DOp(self.name, self.size, interpolation)

    def build(self, input_shape):
        if len(input_shape) != 4:
            raise ValueError(f"{self.context}: expected a 4D input, got shape {input_shape}")

    def call(self, inputs):
        return apply(self.op, inputs)

    def get_config(self):
        return {**super().get_config(), "size": self.size, "data_format": self.data_format,
                "interpolation": self.interpolation}
