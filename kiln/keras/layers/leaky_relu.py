"""LeakyReLU layer (`keras.layers.LeakyReLU`): x for x >= 0, negative_slope * x otherwise."""

import warnings

from ... import ops
from ...graph.symbolic import apply
from ...ops.eltwise import activation_name
from .base_layer import Layer, unique_name
from .relu import non_negative


class LeakyReLU(Layer):
    """Args: negative_slope (float >= 0, default 0.3; Keras 2's `alpha` is accepted with a
    warning, as Keras 3 does). Fuses into a preceding Conv2D / Dense (oneDNN relu with alpha)."""

    supports_masking = True  # the output carries the input's mask, as Keras

    def __init__(self, negative_slope=0.3, name=None, **kwargs):
        if "alpha" in kwargs:
            negative_slope = kwargs.pop("alpha")
            warnings.warn("Argument `alpha` is deprecated. Use `negative_slope` instead.",
                          stacklevel=2)
        super().__init__(name=name or unique_name("leaky_re_lu"), **kwargs)
        self.negative_slope = non_negative(negative_slope, self.context, "negative_slope")
        self.op = ops.ActivationOp(self.name, activation_name("leaky_relu",
                                                              negative_slope=self.negative_slope))

    def call(self, inputs):
        return apply(self.op, inputs)

    def get_config(self):
        return {**super().get_config(), "negative_slope": self.negative_slope}
