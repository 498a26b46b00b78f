"""Masking layer (`keras.layers.Masking`): marks the padding steps of a float sequence."""

from ...graph.symbolic import apply
from ...ops.masks import MaskingOp, StepMaskOp
from .base_layer import Layer


class Masking(Layer):
    """A step of a (batch, steps, features) sequence whose features all equal `mask_value` is
    padding: the output is the input with those steps set to 0, and carries the mask
    any(x != mask_value) over the features to the layers after it (as Keras).

    Args: mask_value (a float, default 0.0).
    """

    supports_masking = True

    def __init__(self, mask_value=0.0, **kwargs):
        super().__init__(**kwargs)
        if isinstance(mask_value, bool) or not isinstance(mask_value, (int, float)):
            raise ValueError(f"{self.context}: argument mask_value must be a number, got "
                             f"{mask_value!r}")
        self.mask_value = mask_value
        self.op = MaskingOp(self.name, mask_value)
        self.mask_op = StepMaskOp(f"{self.name}/mask", mask_value)

    def build(self, input_shape):
        if len(input_shape) != 3:
            raise ValueError(f"{self.context}: expected a 3D input (batch, steps, features), "
                             f"got shape {input_shape}")

    def call(self, inputs):
        outputs = apply(self.op, inputs)
        outputs._keras_mask = self.compute_mask(inputs)
        return outputs

    def compute_mask(self, inputs, previous_mask=None):
        return apply(self.mask_op, inputs)

    def get_config(self):
        return {**super().get_config(), "mask_value": self.mask_value}
