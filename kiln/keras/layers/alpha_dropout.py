"""AlphaDropout layer (`keras.layers.AlphaDropout`): dropout for self-normalizing (SELU)
networks. While training, dropped elements take SELU's saturation value and an affine
transform keeps the mean and variance of a SELU-normalized input (kiln/ops/alpha_dropout.py);
the identity in evaluate / predict."""

from ...graph.symbolic import apply
from ...ops.alpha_dropout import AlphaDropoutOp
from .base_layer import Layer
from .gaussian_noise import draw_seed, fraction


class AlphaDropout(Layer):
    """Args: rate (float in [0, 1); Keras's rate 1 gives an infinite scale), noise_shape (only
    None: a decision per element), seed (int or None)."""

    supports_masking = True  # the output carries the input's mask, as Keras

    def __init__(self, rate, noise_shape=None, seed=None, **kwargs):
        super().__init__(**kwargs)
        self.rate = fraction(rate, self.context, "rate", upper_open=True)
        if noise_shape is not None:
            raise ValueError(f"{self.context}: argument noise_shape must be None (a decision "
                             f"per element), got {noise_shape!r}")
        self.noise_shape = None
        self.seed = seed
        self.op = AlphaDropoutOp(self.name, self.rate, draw_seed(seed))

    def call(self, inputs):
        return apply(self.op, inputs)

    def get_config(self):
        return {**super().get_config(), "rate": self.rate, "seed": self.seed,
                "noise_shape": self.noise_shape}
