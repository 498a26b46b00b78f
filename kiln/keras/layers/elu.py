"""ELU layer (`keras.layers.ELU`): x for x > 0, alpha * (exp(x) - 1) otherwise."""

import numbers

from ... import ops
from ...graph.symbolic import apply
from ...ops.eltwise import activation_name
from .base_layer import Layer


class ELU(Layer):
    """Args: alpha (float, default 1.0). With alpha >= 0 it fuses into a preceding Conv2D /
    Dense (oneDNN elu, backward from the output)."""

    supports_masking = True  # the output carries the input's mask, as Keras

    def __init__(self, alpha=1.0, **kwargs):
        super().__init__(**kwargs)
        if not isinstance(alpha, numbers.Real) or isinstance(alpha, bool):
            raise ValueError(f"{self.context}: argument alpha must be a float, got {alpha!r}")
        self.alpha = float(alpha)
        self.op = ops.ActivationOp(self.name, activation_name("elu", alpha=self.alpha))

    def call(self, inputs):
        return apply(self.op, inputs)

    def get_config(self):
        return {**super().get_config(), "alpha": self.alpha}
