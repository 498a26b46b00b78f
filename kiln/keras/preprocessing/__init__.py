"""Keras 2's `keras.preprocessing` (Keras 3 dropped it; the classic scripts still import it)."""

from . import image

__all__ = ["image"]
