"""Keras 2's `keras.layers.noise` path (old scripts import from it);
the layers live in their own modules.
`__all__` is empty so `keras.layers` does not list them twice."""

from .alpha_dropout import AlphaDropout  # noqa: F401
from .gaussian_dropout import GaussianDropout  # noqa: F401
from .gaussian_noise import GaussianNoise  # noqa: F401

__all__ = []
