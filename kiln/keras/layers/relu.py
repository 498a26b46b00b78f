"""ReLU layer (`keras.layers.ReLU`): relu with a ceiling, a negative slope and a threshold."""

import numbers

from ... import ops
from ...graph.symbolic import apply
from ...ops.eltwise import activation_name
from .base_layer import Layer, unique_name


def non_negative(value, context, argument, allow_none=False):
    """A float >= 0 (or None when allowed); the error names the layer and the argument."""
    if value is None and allow_none:
        return None
    if not isinstance(value, numbers.Real) or isinstance(value, bool) or value < 0:
        expected = "a float >= 0" + (" or None" if allow_none else "")
        raise ValueError(f"{context}: argument {argument} must be {expected}, got {value!r}")
    return float(value)


class ReLU(Layer):
    """f(x) = max_value for x >= max_value, x for threshold <= x < max_value,
    negative_slope * (x - threshold) otherwise (Keras 3's formula).

    Args: max_value (float >= 0 or None), negative_slope (float >= 0), threshold (float >= 0).
    relu, relu6 (max_value 6) and leaky relu fuse into a preceding Conv2D / Dense; a threshold,
    or a slope together with a ceiling, runs as a numba kernel.
    """

    supports_masking = True  # the output carries the input's mask, as Keras

    def __init__(self, max_value=None, negative_slope=0.0, threshold=0.0, name=None, **kwargs):
        super().__init__(name=name or unique_name("re_lu"), **kwargs)
        self.max_value = non_negative(max_value, self.context, "max_value", allow_none=True)
        self.negative_slope = non_negative(negative_slope, self.context, "negative_slope")
        self.threshold = non_negative(threshold, self.context, "threshold")
        self.activation = activation_name("relu", negative_slope=self.negative_slope,
                                          max_value=self.max_value, threshold=self.threshold)
        self.op = ops.ActivationOp(self.name, self.activation)

    def call(self, inputs):
        return apply(self.op, inputs)

    def get_config(self):
        return {**super().get_config(), "max_value": self.max_value,
                "negative_slope": self.negative_slope, "threshold": self.threshold}
