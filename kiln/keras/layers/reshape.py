"""Reshape layer (`keras.layers.Reshape`): another shape for the same values, in Keras's
row-major order."""

from ...graph.symbolic import apply
from ...ops.reshape import ReshapeOp, resolve_target
from .arguments import is_integer
from .base_layer import Layer


class Reshape(Layer):
    """Args: target_shape (tuple of ints without the batch; one entry may be -1). Outputs of
    1 to 3 axes after the batch; a 4D output is an image in the input's data format."""

    def __init__(self, target_shape, **kwargs):
        super().__init__(**kwargs)
        if not isinstance(target_shape, (list, tuple)) or not all(
                is_integer(d) and (d > 0 or d == -1) for d in target_shape) or list(
                target_shape).count(-1) > 1:
            raise ValueError(f"{self.context}: argument target_shape must be a tuple of ints > 0 "
                             f"(one of them may be -1), got {target_shape!r}")
        self.target_shape = tuple(int(d) for d in target_shape)

    def build(self, input_shape):
        size = 1
        for d in input_shape[1:]:
            size *= d
        resolve_target(self.target_shape, size, self.context)

    def call(self, inputs):
        op = ReshapeOp(self.name, self.target_shape, inputs.data_format, inputs.flattened)
        return apply(op, inputs, flattened=False)

    def get_config(self):
        return {**super().get_config(), "target_shape": self.target_shape}
