"""CenterCrop layer (`keras.layers.CenterCrop`): the centred height x width window of each
image, or, for an image smaller than that, Keras's smart_resize (the centred window of the
target's aspect ratio, resized bilinearly); in every plan."""

from ...ops.image_resize import ResizeOp
from .image_preprocessing import _ImagePreprocessingLayer, positive_int


class CenterCrop(_ImagePreprocessingLayer):
    """Args: height, width, data_format."""

    def __init__(self, height, width, data_format=None, **kwargs):
        super().__init__(**kwargs)
        self.height = positive_int(height, self.context, "height")
        self.width = positive_int(width, self.context, "width")
        self._set_data_format(data_format)
        self.op = ResizeOp(self.name, (self.height, self.width), "CenterCrop")

    def get_config(self):
        return {**super().get_config(), "height": self.height, "width": self.width,
                "data_format": self.data_format}
