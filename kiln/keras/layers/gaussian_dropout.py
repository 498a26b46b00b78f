"""GaussianDropout layer (`keras.layers.GaussianDropout`): multiplies by
N(1, sqrt(rate / (1 - rate))) noise while training; the identity in evaluate / predict."""

from ...graph.symbolic import apply
from ...ops.noise import GaussianDropoutOp
from .base_layer import Layer
from .gaussian_noise import draw_seed, fraction


class GaussianDropout(Layer):
    """Args: rate (float in [0, 1); Keras's rate 1 divides by zero), seed (int or None)."""

    supports_masking = True  # the output carries the input's mask, as Keras

    def __init__(self, rate, seed=None, **kwargs):
        super().__init__(**kwargs)
        self.rate = fraction(rate, self.context, "rate", upper_open=True)
        self.seed = seed
        self.op = GaussianDropoutOp(self.name, self.rate, draw_seed(seed))

    def call(self, inputs):
        return apply(self.op, inputs)

    def get_config(self):
        return {**super().get_config(), "rate": self.rate, "seed": self.seed}
