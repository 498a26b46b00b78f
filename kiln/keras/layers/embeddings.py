"""Keras 2's `keras.layers.embeddings` path (old scripts import from it);
the layers live in their own modules.
`__all__` is empty so `keras.layers` does not list them twice."""

from .embedding import Embedding  # noqa: F401

__all__ = []
