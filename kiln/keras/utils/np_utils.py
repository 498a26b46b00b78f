"""Keras 2's `keras.utils.np_utils` (`to_categorical`, `normalize`)."""

from . import normalize, to_categorical

__all__ = ["normalize", "to_categorical"]
