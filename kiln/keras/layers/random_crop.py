"""RandomCrop layer (`keras.layers.RandomCrop`): in training, one height x width window at a
random position for the whole batch (as Keras draws it); outside training, and for images not
larger than the crop, the centred window of the crop's aspect ratio resized to it."""

from ...ops.image_resize import RandomCropOp
from .gaussian_noise import draw_seed
from .image_preprocessing import _ImagePreprocessingLayer, positive_int


class RandomCrop(_ImagePreprocessingLayer):
    """Args: height, width, seed (int or None: Keras then stores a drawn seed in the config),
    data_format."""

    def __init__(self, height, width, seed=None, data_format=None, **kwargs):
        super().__init__(**kwargs)
        self.height = positive_int(height, self.context, "height")
        self.width = positive_int(width, self.context, "width")
        self._set_data_format(data_format)
        if seed is None:  # Keras stores a drawn seed: a saved layer crops the same
            seed = draw_seed(None) % 2**31
        self.op = RandomCropOp(self.name, (self.height, self.width), self._seed(seed))

    def get_config(self):
        return {**super().get_config(), "height": self.height, "width": self.width,
                "seed": self.seed, "data_format": self.data_format}
