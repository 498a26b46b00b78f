"""Keras 2's `keras.utils.generic_utils` path: the same objects as `keras.utils` /
`keras.saving`, a custom object resolved by name inside `CustomObjectScope`, `to_list` as
Keras 2 documents it; and `keras.utils` lists the serialization helpers Keras 3 lists there."""

import numpy as np
import pytest
from keras_oracle import real_keras

from kiln.keras import layers, saving, utils
from kiln.keras.utils import generic_utils

SERIALIZATION_NAMES = ["CustomObjectScope", "custom_object_scope", "deserialize_keras_object",
                       "get_custom_objects", "get_registered_name", "get_registered_object",
                       "register_keras_serializable", "serialize_keras_object"]


def test_generic_utils_gives_the_same_objects():
    assert generic_utils.Progbar is utils.Progbar
    for name in SERIALIZATION_NAMES:
        assert getattr(generic_utils, name) is getattr(saving, name), name
        assert getattr(utils, name) is getattr(saving, name), name


def test_keras_utils_lists_the_same_serialization_names_as_keras_3():
    keras = real_keras()
    for name in SERIALIZATION_NAMES:
        assert hasattr(keras.utils, name) and hasattr(utils, name), name


class Doubler(layers.Layer):
    def call(self, inputs):
        return inputs * 2.0


def test_custom_object_scope_resolves_a_custom_layer_by_name():
    config = {"class_name": "Doubler", "config": {"name": "doubler"}}
    with pytest.raises(Exception, match="Doubler"):
        generic_utils.deserialize_keras_object(config)
    with generic_utils.CustomObjectScope({"Doubler": Doubler}):
        layer = generic_utils.deserialize_keras_object(config)
    assert type(layer) is Doubler and layer.name == "doubler"
    with generic_utils.custom_object_scope({"Doubler": Doubler}):
        assert generic_utils.get_registered_object("Doubler") is Doubler
    assert generic_utils.get_registered_object("Doubler") is None


def test_to_list_as_keras_2():
    items = [1, 2]
    assert generic_utils.to_list(items) is items
    assert generic_utils.to_list((1, 2)) == [(1, 2)]
    assert generic_utils.to_list((1, 2), allow_tuple=True) == [1, 2]
    array = np.zeros(3)
    assert generic_utils.to_list(array)[0] is array
    assert generic_utils.to_list(None) == [None]
