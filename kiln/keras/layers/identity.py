"""Identity layer (`keras.layers.Identity`): returns its input; no data moves."""

from ...graph.symbolic import apply
from ...ops.identity import IdentityOp
from .base_layer import Layer


class Identity(Layer):
    """No arguments besides the base layer's."""

    supports_masking = True  # the output carries the input's mask, as Keras

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.op = IdentityOp(self.name)

    def call(self, inputs):
        return apply(self.op, inputs)
