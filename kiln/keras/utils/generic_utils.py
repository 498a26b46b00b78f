"""Keras 2's `keras.utils.generic_utils` path (old scripts import `Progbar`,
`CustomObjectScope` / `custom_object_scope` and the (de)serialization helpers from it); the
objects live in `keras.utils` and `keras.saving`."""

from ..saving.serialization import (  # noqa: F401
    CustomObjectScope,
    custom_object_scope,
    deserialize_keras_object,
    get_custom_objects,
    get_registered_name,
    get_registered_object,
    register_keras_serializable,
    serialize_keras_object,
)
from . import Progbar  # noqa: F401


def to_list(x, allow_tuple=False):
    """Keras 2's helper: `x` if it is a list, `list(x)` for a tuple when `allow_tuple`,
    else `[x]`."""
    if isinstance(x, list):
        return x
    if allow_tuple and isinstance(x, tuple):
        return list(x)
    return [x]


__all__ = ["CustomObjectScope", "Progbar", "custom_object_scope", "deserialize_keras_object",
           "get_custom_objects", "get_registered_name", "get_registered_object",
           "register_keras_serializable", "serialize_keras_object", "to_list"]
