"""RandomBrightness layer (`keras.layers.RandomBrightness`): in training, adds to each image a
shift drawn per image in [lower, upper] times the width of value_range, clipped to
value_range; the identity outside training."""

from ...ops.image_color import RandomBrightnessOp
from .image_preprocessing import _ImagePreprocessingLayer, factor_range, value_range_pair


class RandomBrightness(_ImagePreprocessingLayer):
    """Args: factor (f: [-f, f], or (lower, upper); within [-1, 1]), value_range, seed,
    data_format."""

    def __init__(self, factor, value_range=(0, 255), seed=None, data_format=None, **kwargs):
        super().__init__(**kwargs)
        self.factor = factor_range(factor, self.context, "factor", (-1, 1), symmetric=False)
        self.value_range = sorted(value_range_pair(value_range, self.context))
        self._set_data_format(data_format)
        self.op = RandomBrightnessOp(self.name, self.factor, self.value_range,
                                     self._seed(seed))

    def get_config(self):
        return {**super().get_config(), "data_format": self.data_format,
                "factor": self.factor, "value_range": self.value_range, "seed": self.seed}
