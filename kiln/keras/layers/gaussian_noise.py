"""GaussianNoise layer (`keras.layers.GaussianNoise`): adds N(0, stddev) noise while
training; the identity in evaluate / predict."""

import numbers

from ...graph.symbolic import apply
from ...ops.noise import GaussianNoiseOp
from .. import initializers
from .base_layer import Layer


def draw_seed(seed):
    """The layer's seed, or one from kiln's seeded generator (set_random_seed)."""
    return int(initializers._generator[0].integers(0, 2**62)) if seed is None else seed


def fraction(value, context, argument, upper_open=False):
    """A float in [0, 1] ([0, 1) with upper_open); the error names the layer and argument."""
    if not isinstance(value, numbers.Real) or isinstance(value, bool) or not 0 <= value <= 1 \
            or (upper_open and value == 1):
        expected = "[0, 1)" if upper_open else "[0, 1]"
        raise ValueError(f"{context}: argument {argument} must be a float in {expected}, got "
                         f"{value!r}")
    return float(value)


class GaussianNoise(Layer):
    """Args: stddev (float in [0, 1], as Keras accepts), seed (int or None)."""

    supports_masking = True  # the output carries the input's mask, as Keras

    def __init__(self, stddev, seed=None, **kwargs):
        super().__init__(**kwargs)
        self.stddev = fraction(stddev, self.context, "stddev")
        self.seed = seed
        self.op = GaussianNoiseOp(self.name, self.stddev, draw_seed(seed))

    def call(self, inputs):
        return apply(self.op, inputs)

    def get_config(self):
        return {**super().get_config(), "stddev": self.stddev, "seed": self.seed}
