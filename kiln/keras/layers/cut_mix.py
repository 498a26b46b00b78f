"""CutMix layer (`keras.layers.CutMix`): in training, pastes into each image a box of another
image of the batch (box sides sqrt(1 - w) of the image's, w ~ Beta(a, a), a drawn in factor);
the identity outside training. Inside a model only the images are mixed, as with Keras's
layer in a model."""

from ...ops.image_mix import MixOp
from .image_preprocessing import _ImagePreprocessingLayer, factor_range


class CutMix(_ImagePreprocessingLayer):
    """Args: factor (a number or a pair within [0, 1], default 1.0), seed, data_format."""

    def __init__(self, factor=1.0, seed=None, data_format=None, **kwargs):
        super().__init__(**kwargs)
        self.factor = factor_range(factor, self.context, "factor", (0, 1), symmetric=False)
        self._set_data_format(data_format)
        self.op = MixOp(self.name, "CutMix", self.factor, self._seed(seed))

    def get_config(self):
        return {**super().get_config(), "data_format": self.data_format,
                "factor": self.factor, "seed": self.seed}
