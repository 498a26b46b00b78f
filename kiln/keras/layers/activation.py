"""Activation layer (`keras.layers.Activation`)."""

from ... import ops
from ...graph.symbolic import apply
from .. import activations
from .base_layer import Layer


class Activation(Layer):
    """Applies an activation by its Keras name or function (every one of
    `kiln.keras.activations`; softmax and log_softmax on the last axis). After a Conv2D or
    Dense it fuses into that layer's primitive where oneDNN can (see kiln/ops/eltwise.py)."""

    def __init__(self, activation, **kwargs):
        super().__init__(**kwargs)
        self.activation = activations.get_name(activation, self.context)
        self.op = ops.Activation(self.name, self.activation)

    def call(self, inputs):
        return apply(self.op, inputs)

    def get_config(self):
        return {**super().get_config(), "activation": self.activation}
