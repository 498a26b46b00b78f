"""RandomFlip layer (`keras.layers.RandomFlip`): in training, flips each image with
probability 1/2 (both ways at once for 'horizontal_and_vertical', as Keras 3 draws one value per
image); the identity outside training."""

from ...ops.image_flip import MODES, RandomFlipOp
from .image_preprocessing import _ImagePreprocessingLayer, choice


class RandomFlip(_ImagePreprocessingLayer):
    """Args: mode ('horizontal', 'vertical' or 'horizontal_and_vertical'), seed,
    data_format."""

    def __init__(self, mode="horizontal_and_vertical", seed=None, data_format=None, **kwargs):
        super().__init__(**kwargs)
        self.mode = choice(mode, self.context, "mode", MODES)
        self._set_data_format(data_format)
        self.op = RandomFlipOp(self.name, mode, self._seed(seed))

    def get_config(self):
        return {**super().get_config(), "mode": self.mode, "seed": self.seed,
                "data_format": self.data_format}
