"""Permute layer (`keras.layers.Permute`): reorders the axes after the batch."""

from ...graph.symbolic import apply
from ...ops.permute import PermuteOp
from .arguments import is_integer
from .base_layer import Layer


class Permute(Layer):
    """Args: dims (a permutation of 1..rank-1, e.g. (2, 1) swaps the two axes of a 3D input;
    axes count in the Keras shape, so in the layer's data format for images)."""

    def __init__(self, dims, **kwargs):
        super().__init__(**kwargs)
        if not isinstance(dims, (list, tuple)) or not all(is_integer(d) for d in dims) or \
                sorted(dims) != list(range(1, len(dims) + 1)):
            raise ValueError(f"{self.context}: argument dims must be a permutation of "
                             f"1..{len(dims) if isinstance(dims, (list, tuple)) else 'rank-1'} "
                             f"(the axes after the batch), got {dims!r}")
        self.dims = tuple(int(d) for d in dims)

    def build(self, input_shape):
        if len(self.dims) != len(input_shape) - 1:
            raise ValueError(f"{self.context}: argument dims {self.dims} must permute the "
                             f"{len(input_shape) - 1} axes after the batch of shape "
                             f"{input_shape}")

    def call(self, inputs):
        return apply(PermuteOp(self.name, self.dims, inputs.data_format), inputs)

    def get_config(self):
        return {**super().get_config(), "dims": self.dims}
