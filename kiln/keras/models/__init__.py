"""Keras models (`keras.models`)."""

from ..saving.saving_api import (
    clone_model,
    load_model,
    model_from_config,
    model_from_json,
    save_model,
)
from .model import Model
from .sequential import Sequential

__all__ = ["Model", "Sequential", "clone_model", "load_model", "model_from_config",
           "model_from_json", "save_model"]
