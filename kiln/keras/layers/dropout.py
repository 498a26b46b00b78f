"""Dropout layer (`keras.layers.Dropout`)."""

from ... import ops
from ...graph.symbolic import apply
from .. import initializers
from .base_layer import Layer


class Dropout(Layer):
    """Zeroes a fraction `rate` of the inputs while training and scales the rest by
    1 / (1 - rate); does nothing in evaluate/predict.

    Args:
        rate: float in [0, 1).
        noise_shape: only None is supported.
        seed: int for a reproducible mask sequence.
    """

    supports_masking = True  # the output carries the input's mask, as Keras

    def __init__(self, rate, noise_shape=None, seed=None, **kwargs):
        super().__init__(**kwargs)
        if not isinstance(rate, (int, float)) or not 0 <= rate < 1:
            raise ValueError(f"{self.context}: argument rate must be a float in [0, 1), "
                             f"got {rate!r}")
        if noise_shape is not None:
            raise ValueError(f"{self.context}: argument noise_shape must be None (per-element "
                             f"dropout), got {noise_shape!r}")
        self.rate, self.seed = float(rate), seed
        if seed is None:
            seed = int(initializers._generator[0].integers(0, 2**62))
        self.op = ops.DropoutOp(self.name, self.rate, seed)

    def call(self, inputs):
        return apply(self.op, inputs)

    def get_config(self):
        return {**super().get_config(), "rate": self.rate, "seed": self.seed,
                "noise_shape": None}
