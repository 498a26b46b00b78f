"""RandomContrast layer (`keras.layers.RandomContrast`): in training, scales each image's
deviation from its per-channel mean by a factor drawn per image in [1 - lower, 1 + upper]
(a single number f gives (0, f), as Keras 3 stores it), clipped to value_range; the identity
outside training."""

from ...ops.image_color import RandomContrastOp
from .image_preprocessing import _ImagePreprocessingLayer, factor_range, value_range_pair


class RandomContrast(_ImagePreprocessingLayer):
    """Args: factor (a number or a pair within [0, 1]), value_range, seed, data_format."""

    def __init__(self, factor, value_range=(0, 255), seed=None, data_format=None, **kwargs):
        super().__init__(**kwargs)
        self.factor = factor_range(factor, self.context, "factor", (0, 1), symmetric=False)
        self.value_range = value_range_pair(value_range, self.context)
        self._set_data_format(data_format)
        self.op = RandomContrastOp(self.name, self.factor, value_range, self._seed(seed))

    def get_config(self):
        return {**super().get_config(), "data_format": self.data_format,
                "factor": self.factor, "value_range": self.value_range, "seed": self.seed}
