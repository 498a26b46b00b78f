"""RandomTranslation layer (`keras.layers.RandomTranslation`): in training, shifts each image
by fractions of its height and width drawn per image; the identity outside training."""

from ...ops.image_affine import RandomAffineOp
from .image_preprocessing import (
    AFFINE_INTERPOLATIONS,
    FILL_MODES,
    _ImagePreprocessingLayer,
    choice,
    factor_range,
)


class RandomTranslation(_ImagePreprocessingLayer):
    """Args: height_factor, width_factor (f: [-f, f], or (lower, upper); within [-1, 1]),
    fill_mode, interpolation, seed, fill_value, data_format."""

    def __init__(self, height_factor, width_factor, fill_mode="reflect",
                 interpolation="bilinear", seed=None, fill_value=0.0, data_format=None,
                 **kwargs):
        super().__init__(**kwargs)
        height = factor_range(height_factor, self.context, "height_factor", (-1, 1))
        width = factor_range(width_factor, self.context, "width_factor", (-1, 1))
        self.height_factor, self.width_factor = height_factor, width_factor
        self.fill_mode = choice(fill_mode, self.context, "fill_mode", FILL_MODES)
        self.interpolation = choice(interpolation, self.context, "interpolation",
                                    AFFINE_INTERPOLATIONS)
        self.fill_value = fill_value
        self._set_data_format(data_format)
        self.op = RandomAffineOp(self.name, "RandomTranslation", (height, width),
                                 interpolation, fill_mode, fill_value, self._seed(seed))

    def get_config(self):
        return {**super().get_config(), "height_factor": self.height_factor,
                "width_factor": self.width_factor, "fill_mode": self.fill_mode,
                "interpolation": self.interpolation, "seed": self.seed,
                "fill_value": self.fill_value, "data_format": self.data_format}
