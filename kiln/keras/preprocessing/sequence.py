"""Keras 2's `keras.preprocessing.sequence` (Keras 3 keeps only `keras.utils.pad_sequences`)."""

from ..utils.sequence_utils import pad_sequences

__all__ = ["pad_sequences"]
