"""Small datasets, loaded like `keras.datasets`."""

from . import cifar10, cifar100, fashion_mnist, imdb, mnist, reuters

__all__ = ["cifar10", "cifar100", "fashion_mnist", "imdb", "mnist", "reuters"]
