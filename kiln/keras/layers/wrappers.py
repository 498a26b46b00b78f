"""Keras 2's `keras.layers.wrappers` path (old scripts import from it);
the layers live in their own modules.
`__all__` is empty so `keras.layers` does not list them twice."""

from .bidirectional import Bidirectional  # noqa: F401
from .time_distributed import TimeDistributed  # noqa: F401

__all__ = []
