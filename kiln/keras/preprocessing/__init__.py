"""Keras 2's `keras.preprocessing` (Keras 3 dropped it; the classic scripts still import it)."""

from ..utils.image_dataset import image_dataset_from_directory
from ..utils.timeseries_dataset import timeseries_dataset_from_array
from . import image, sequence, text

__all__ = ["image", "image_dataset_from_directory", "sequence", "text",
           "timeseries_dataset_from_array"]
