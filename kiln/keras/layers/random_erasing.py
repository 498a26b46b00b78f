"""RandomErasing layer (`keras.layers.RandomErasing`): in training, erases a random box of each
image with a probability drawn in factor (box sides sqrt(U(scale)) of the image's), filling it
with fill_value, or with normal noise times value_range's upper end when fill_value is None,
clipped to value_range; the identity outside training."""

import numbers

from ...ops.image_mix import MixOp
from .image_preprocessing import _ImagePreprocessingLayer, factor_range, value_range_pair


class RandomErasing(_ImagePreprocessingLayer):
    """Args: factor (a number or a pair within [0, 1], default 1.0), scale (a pair within
    [0, 1], default (0.02, 0.33)), fill_value (None, a number or 3 numbers), value_range,
    seed, data_format."""

    def __init__(self, factor=1.0, scale=(0.02, 0.33), fill_value=None, value_range=(0, 255),
                 seed=None, data_format=None, **kwargs):
        super().__init__(**kwargs)
        self.factor = factor_range(factor, self.context, "factor", (0, 1), symmetric=False)
        self.scale = factor_range(scale, self.context, "scale", (0, 1), symmetric=False)
        if fill_value is not None and not (
                isinstance(fill_value, numbers.Real) and not isinstance(fill_value, bool)
                or isinstance(fill_value, (tuple, list)) and len(fill_value) == 3
                and all(isinstance(v, numbers.Real) for v in fill_value)):
            raise ValueError(f"{self.context}: argument fill_value must be None, a number or "
                             f"a list of three numbers, got {fill_value!r}")
        self.fill_value = fill_value
        self.value_range = value_range_pair(value_range, self.context)
        self._set_data_format(data_format)
        self.op = MixOp(self.name, "RandomErasing", (*self.factor, *self.scale),
                        self._seed(seed), fill_value, value_range)

    def get_config(self):
        return {**super().get_config(), "data_format": self.data_format,
                "factor": self.factor, "scale": self.scale, "fill_value": self.fill_value,
                "value_range": self.value_range, "seed": self.seed}
