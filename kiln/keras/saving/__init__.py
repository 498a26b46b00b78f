"""Saving and loading (`keras.saving`): the Keras 3 weights file so far."""

from .weights_file import load_weights, save_weights

__all__ = ["load_weights", "save_weights"]
