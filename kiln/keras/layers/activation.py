"""Activation layer (`keras.layers.Activation`)."""

from ... import ops
from ...graph.symbolic import apply
from .. import activations
from .base_layer import Layer


class Activation(Layer):
    """Applies an activation by its Keras name or function (every one of
    `kiln.keras.activations`; softmax and log_softmax on the last axis). After a Conv2D or
    Dense it fuses into that layer's primitive where oneDNN can (see kiln/ops/eltwise.py).

    Any other callable is taken as Keras 3 takes it, e.g.
    `Activation(lambda x: keras.activations.relu(x, max_value=6))`: it is traced on the
    symbolic input like a Lambda's function, so it must compute with keras.activations /
    keras.ops."""

    supports_masking = True  # the output carries the input's mask, as Keras

    def __init__(self, activation, **kwargs):
        super().__init__(**kwargs)
        self.activation, self.function = activations.resolve(activation, self.context)
        if self.function is not None:
            self.activation = None
        self.op = ops.ActivationOp(self.name, self.activation) if self.function is None \
            else None

    def call(self, inputs):
        if self.function is not None:
            return self.function(inputs)
        return apply(self.op, inputs)

    def get_config(self):
        # a function as Keras 3 writes it (a lambda as its bytecode, a function by name)
        activation = activations.config_of(self.activation, self.function)
        return {**super().get_config(), "activation": activation}
