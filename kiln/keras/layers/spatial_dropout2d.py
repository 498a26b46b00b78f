"""SpatialDropout2D layer (`keras.layers.SpatialDropout2D`): drops whole channels of each
image while training (the rest scaled by 1 / (1 - rate)); the identity otherwise."""

from ...graph.symbolic import apply
from ...ops.noise import SpatialDropout2DOp
from .. import backend
from .base_layer import Layer
from .gaussian_noise import draw_seed, fraction


class SpatialDropout2D(Layer):
    """Args: rate (float in [0, 1)), data_format, seed (int or None)."""

    def __init__(self, rate, data_format=None, seed=None, name=None, dtype=None):
        super().__init__(name=name, dtype=dtype)
        self.rate = fraction(rate, self.context, "rate", upper_open=True)
        self.data_format = backend.normalize_data_format(data_format, self.context)
        self.seed = seed
        self.op = SpatialDropout2DOp(self.name, self.rate, draw_seed(seed))

    def build(self, input_shape):
        if len(input_shape) != 4:
            raise ValueError(f"{self.context}: expected a 4D input, got shape {input_shape}")

    def call(self, inputs):
        return apply(self.op, inputs)

    def get_config(self):
        # Keras 3's own keys: no 'trainable', the dtype by name
        return {"rate": self.rate, "seed": self.seed, "name": self.name,
                "dtype": self.policy_name,
                "data_format": self.data_format}
