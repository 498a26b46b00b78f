"""SpatialDropout1D layer (`keras.layers.SpatialDropout1D`): drops whole channels of each
sequence while training (every step of a dropped channel, the rest scaled by 1 / (1 - rate));
the identity otherwise. SpatialDropout2D's op (one mask value per sample and channel, oneDNN's
broadcasting multiply) on the sequence seen as an image of height 1 (ops/sequence_as_image.py).
"""

from ...graph.symbolic import apply
from ...ops.noise import SpatialDropout2DOp
from ...ops.sequence_as_image import SequenceAsImageOp
from ...ops.tensor import CHANNELS_LAST
from .base_layer import Layer
from .gaussian_noise import draw_seed, fraction
from .sequences import check_sequence


class SpatialDropout1D(Layer):
    """Args: rate (float in [0, 1)), seed (int or None). The channels are the last axis, as
    Keras's layer (it has no data_format) drops them.

    Example:
        >>> x = SpatialDropout1D(0.2)(Embedding(1000, 32)(Input((80,))))
    """

    def __init__(self, rate, seed=None, name=None, dtype=None, **kwargs):
        # tf.keras 2 configs carry Dropout's noise_shape (None) and trainable
        noise_shape = kwargs.pop("noise_shape", None)
        super().__init__(name=name, dtype=dtype, **kwargs)
        if noise_shape is not None:
            raise ValueError(f"{self.context}: argument noise_shape must be None (the layer "
                             f"drops whole channels), got {noise_shape!r}")
        self.rate = fraction(rate, self.context, "rate", upper_open=True)
        self.seed = seed
        self.op = SequenceAsImageOp(
            SpatialDropout2DOp(self.name, self.rate, draw_seed(seed), kind="SpatialDropout1D"),
            CHANNELS_LAST, "SpatialDropout1D")

    def build(self, input_shape):
        check_sequence(input_shape, self.context)

    def call(self, inputs):
        return apply(self.op, inputs)

    def get_config(self):
        # Keras 3's own keys: no 'trainable', the dtype by name
        return {"rate": self.rate, "seed": self.seed, "name": self.name,
                "dtype": self.policy_name}
