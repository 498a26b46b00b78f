"""RandomShear layer (`keras.layers.RandomShear`): in training, shears each image by x and y
factors drawn per image, both negated for about half of the images (as Keras draws them), and
sampled as keras.ops.image.affine_transform does; the identity outside training."""

from ...ops.image_affine import RandomAffineOp
from .image_preprocessing import (
    AFFINE_INTERPOLATIONS,
    FILL_MODES,
    _ImagePreprocessingLayer,
    choice,
    factor_range,
)


def _shear_range(value, context, argument):
    """Keras's check (a number in [0, 1] or a pair of them), except that a pair may reach down
    to -1: the config stores a number f as (-f, f), which Keras's own from_config rejects."""
    bounds = (-1, 1) if isinstance(value, (tuple, list)) else (0, 1)
    return factor_range(value, context, argument, bounds)


class RandomShear(_ImagePreprocessingLayer):
    """Args: x_factor, y_factor (f: [-f, f], or (lower, upper); within [0, 1]),
    interpolation, fill_mode, fill_value, data_format, seed."""

    def __init__(self, x_factor=0.0, y_factor=0.0, interpolation="bilinear",
                 fill_mode="reflect", fill_value=0.0, data_format=None, seed=None, **kwargs):
        super().__init__(**kwargs)
        self.x_factor = _shear_range(x_factor, self.context, "x_factor")
        self.y_factor = _shear_range(y_factor, self.context, "y_factor")
        self.fill_mode = choice(fill_mode, self.context, "fill_mode", FILL_MODES)
        self.interpolation = choice(interpolation, self.context, "interpolation",
                                    AFFINE_INTERPOLATIONS)
        self.fill_value = fill_value
        self._set_data_format(data_format)
        self.op = RandomAffineOp(self.name, "RandomShear", (self.x_factor, self.y_factor),
                                 interpolation, fill_mode, fill_value, self._seed(seed))

    def get_config(self):
        return {**super().get_config(), "data_format": self.data_format,
                "x_factor": self.x_factor, "y_factor": self.y_factor,
                "fill_mode": self.fill_mode, "interpolation": self.interpolation,
                "seed": self.seed, "fill_value": self.fill_value}
