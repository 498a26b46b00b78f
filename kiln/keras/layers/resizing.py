"""Resizing layer (`keras.layers.Resizing`): resizes images to (height, width) as Keras 3's JAX
backend does (jax.image.resize weights, applied by a separable numba kernel), optionally
cropping or padding to the target's aspect ratio first; in every plan."""

from ...ops.image_resize import INTERPOLATIONS, ResizeOp
from .image_preprocessing import _ImagePreprocessingLayer, choice, positive_int


class Resizing(_ImagePreprocessingLayer):
    """Args: height, width, interpolation ('bilinear', 'nearest', 'bicubic', 'lanczos3',
    'lanczos5', and 'area' as jax.image.resize, which Keras's JAX backend lacks),
    crop_to_aspect_ratio, pad_to_aspect_ratio, fill_mode ('constant' only, as
    Keras's JAX backend), fill_value, antialias, data_format."""

    def __init__(self, height, width, interpolation="bilinear", crop_to_aspect_ratio=False,
                 pad_to_aspect_ratio=False, fill_mode="constant", fill_value=0.0,
                 antialias=False, data_format=None, **kwargs):
        super().__init__(**kwargs)
        self.height = positive_int(height, self.context, "height")
        self.width = positive_int(width, self.context, "width")
        self.interpolation = choice(interpolation, self.context, "interpolation",
                                    INTERPOLATIONS)
        self.fill_mode = choice(fill_mode, self.context, "fill_mode", ("constant",))
        if crop_to_aspect_ratio and pad_to_aspect_ratio:
            raise ValueError(f"{self.context}: only one of the arguments crop_to_aspect_ratio "
                             "and pad_to_aspect_ratio can be True")
        self.crop_to_aspect_ratio = bool(crop_to_aspect_ratio)
        self.pad_to_aspect_ratio = bool(pad_to_aspect_ratio)
        self.fill_value, self.antialias = fill_value, bool(antialias)
        self._set_data_format(data_format)
        self.op = ResizeOp(self.name, (self.height, self.width), "Resizing", interpolation,
                           self.crop_to_aspect_ratio, self.pad_to_aspect_ratio, fill_value,
                           self.antialias)

    def get_config(self):
        return {**super().get_config(), "height": self.height, "width": self.width,
                "interpolation": self.interpolation,
                "crop_to_aspect_ratio": self.crop_to_aspect_ratio,
                "pad_to_aspect_ratio": self.pad_to_aspect_ratio, "fill_mode": self.fill_mode,
                "fill_value": self.fill_value, "antialias": self.antialias,
                "data_format": self.data_format}
