"""Keras 2's `keras.layers.advanced_activations` path (old scripts import from it);
the layers live in their own modules.
`__all__` is empty so `keras.layers` does not list them twice."""

from .elu import ELU  # noqa: F401
from .leaky_relu import LeakyReLU  # noqa: F401
from .prelu import PReLU  # noqa: F401
from .relu import ReLU  # noqa: F401
from .softmax import Softmax  # noqa: F401

__all__ = []
