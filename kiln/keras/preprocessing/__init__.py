"""Keras 2's `keras.preprocessing` (Keras 3 dropped it; the classic scripts still import it)."""

from ..utils.timeseries_dataset import timeseries_dataset_from_array
from . import image, sequence, text

__all__ = ["image", "sequence", "text", "timeseries_dataset_from_array"]
