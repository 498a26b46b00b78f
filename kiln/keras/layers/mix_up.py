"""MixUp layer (`keras.layers.MixUp`): in training, blends each image with another image of the
batch, w * x + (1 - w) * x[other], w ~ Beta(alpha, alpha) per image; the identity outside
training. Inside a model only the images are mixed (the labels are not the layer's to see),
as with Keras's layer in a model."""

import numbers

from ...ops.image_mix import MixOp
from .image_preprocessing import _ImagePreprocessingLayer


class MixUp(_ImagePreprocessingLayer):
    """Args: alpha (> 0, default 0.2), data_format, seed."""

    def __init__(self, alpha=0.2, data_format=None, seed=None, **kwargs):
        super().__init__(**kwargs)
        if not isinstance(alpha, numbers.Real) or isinstance(alpha, bool) or alpha <= 0:
            raise ValueError(f"{self.context}: argument alpha must be a positive number, got "
                             f"{alpha!r}")
        self.alpha = alpha
        self._set_data_format(data_format)
        self.op = MixOp(self.name, "MixUp", (alpha,), self._seed(seed))

    def get_config(self):
        return {**super().get_config(), "data_format": self.data_format, "alpha": self.alpha,
                "seed": self.seed}
