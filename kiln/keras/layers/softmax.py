"""Softmax layer (`keras.layers.Softmax`): softmax over one axis (oneDNN softmax)."""

from ...graph.symbolic import apply
from ...ops.softmax import SoftmaxOp
from .base_layer import Layer


class Softmax(Layer):
    """Args: axis (int, default -1, any axis but the batch; a list of one axis is that
    axis). Several axes at once and the `mask` call argument are not supported yet."""

    def __init__(self, axis=-1, **kwargs):
        super().__init__(**kwargs)
        self.axis = axis
        single = axis[0] if isinstance(axis, (list, tuple)) and len(axis) == 1 else axis
        if not isinstance(single, int) or isinstance(single, bool):
            raise ValueError(f"{self.context}: argument axis must be an int (one axis; "
                             f"several axes are not supported yet), got {axis!r}")
        self.op = SoftmaxOp(self.name, single)

    def build(self, input_shape):
        rank = len(input_shape)
        if not -rank < self.op.axis < rank or self.op.axis % rank == 0:
            raise ValueError(f"{self.context}: argument axis must be in [1, {rank - 1}] or "
                             f"[-{rank - 1}, -1] for an input of shape {input_shape}, got "
                             f"{self.axis!r}")

    def call(self, inputs, mask=None):
        if mask is not None:
            raise ValueError(f"{self.context}: call argument mask is not supported yet, "
                             "expected None")
        return apply(self.op, inputs)

    def get_config(self):
        return {**super().get_config(), "axis": self.axis}
