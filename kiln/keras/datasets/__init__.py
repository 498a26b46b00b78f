"""Small datasets, loaded like `keras.datasets`."""

from . import cifar10, mnist

__all__ = ["cifar10", "mnist"]
