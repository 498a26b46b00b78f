"""RandomGrayscale layer (`keras.layers.RandomGrayscale`): in training, turns each image of 3
channels to grayscale (kept as 3 equal channels) with probability `factor`; the identity
outside training."""

from ...ops.image_grayscale import RandomGrayscaleOp
from .gaussian_noise import fraction
from .image_preprocessing import _ImagePreprocessingLayer


class RandomGrayscale(_ImagePreprocessingLayer):
    """Args: factor (probability in [0, 1], default 0.5), data_format, seed (not part of the
    config, as in Keras)."""

    def __init__(self, factor=0.5, data_format=None, seed=None, **kwargs):
        super().__init__(**kwargs)
        self.factor = factor
        fraction(factor, self.context, "factor")
        self._set_data_format(data_format)
        self.op = RandomGrayscaleOp(self.name, factor, self._seed(seed))

    def get_config(self):
        return {**super().get_config(), "factor": self.factor,
                "data_format": self.data_format}
