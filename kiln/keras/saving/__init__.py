"""Saving and loading (`keras.saving`): whole models (.keras, Keras 2 .h5), weights files,
JSON architectures and the registry of user objects."""

from .saving_api import load_model, model_from_config, model_from_json, save_model
from .serialization import (
    CustomObjectScope,
    custom_object_scope,
    deserialize_keras_object,
    get_custom_objects,
    get_registered_name,
    get_registered_object,
    register_keras_serializable,
    serialize_keras_object,
)
from .weights_file import load_weights, save_weights

__all__ = ["CustomObjectScope", "custom_object_scope", "deserialize_keras_object",
           "get_custom_objects", "get_registered_name", "get_registered_object",
           "load_model", "load_weights", "model_from_config", "model_from_json",
           "register_keras_serializable", "save_model", "save_weights",
           "serialize_keras_object"]
