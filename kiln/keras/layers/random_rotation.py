"""RandomRotation layer (`keras.layers.RandomRotation`): in training, rotates each image about
its centre by an angle drawn uniformly in factor * 360 degrees (Keras's matrix, sampled as
keras.ops.image.affine_transform does); the identity outside training."""

from ...ops.image_affine import RandomAffineOp
from .image_preprocessing import (
    AFFINE_INTERPOLATIONS,
    FILL_MODES,
    _ImagePreprocessingLayer,
    choice,
    factor_range,
)


class RandomRotation(_ImagePreprocessingLayer):
    """Args: factor (f: [-f, f] of a full turn, or (lower, upper); within [-1, 1]),
    fill_mode ('reflect', 'wrap', 'constant', 'nearest'), interpolation ('bilinear',
    'nearest'), seed, fill_value, data_format."""

    def __init__(self, factor, fill_mode="reflect", interpolation="bilinear", seed=None,
                 fill_value=0.0, data_format=None, **kwargs):
        super().__init__(**kwargs)
        self.factor = factor_range(factor, self.context, "factor", (-1, 1))
        self.fill_mode = choice(fill_mode, self.context, "fill_mode", FILL_MODES)
        self.interpolation = choice(interpolation, self.context, "interpolation",
                                    AFFINE_INTERPOLATIONS)
        self.fill_value = fill_value
        self._set_data_format(data_format)
        self.op = RandomAffineOp(self.name, "RandomRotation", (self.factor, (0, 0)),
                                 interpolation, fill_mode, fill_value, self._seed(seed))

    def get_config(self):
        return {**super().get_config(), "factor": self.factor, "data_format": self.data_format,
                "fill_mode": self.fill_mode, "fill_value": self.fill_value,
                "interpolation": self.interpolation, "seed": self.seed}
