"""Small datasets, loaded like `keras.datasets`."""

from . import cifar10, imdb, mnist, reuters

__all__ = ["cifar10", "imdb", "mnist", "reuters"]
