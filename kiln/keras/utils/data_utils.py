"""Keras 2's `keras.utils.data_utils` (the classic scripts import `get_file` from here)."""

from .file_utils import get_file, validate_file
from .py_dataset import Sequence

__all__ = ["Sequence", "get_file", "validate_file"]
