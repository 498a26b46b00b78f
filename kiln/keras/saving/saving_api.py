"""`model.save`, `keras.models.load_model`, `model.to_json` and `model_from_json`: which
format a file is, and the checks shared by all of them.

`load_model` decides by the file's content, not only its name: a zip is a Keras 3 `.keras`
file, an HDF5 file with a `model_config` attribute is a Keras 2 `.h5` model; anything else is a
ValueError naming the file. `save` picks by the name as Keras does: `.keras` for Keras 3,
`.h5` / `.hdf5` for Keras 2's legacy format.
"""

import json
import os
import zipfile

from . import keras_file, legacy_h5
from .model_config import has_graph, serialize_model
from .serialization import deserialize_layer
from .weights_file import ask_to_proceed_with_overwrite

_H5_SIGNATURE = b"\x89HDF\r\n\x1a\n"
_DAMAGE = (KeyError, TypeError, AttributeError, IndexError, RecursionError, RuntimeError,
           EOFError, UnicodeDecodeError, zipfile.BadZipFile)


def save_model(model, filepath, overwrite=True, zipped=None, **kwargs):
    """Keras 3's `model.save(filepath)` / `keras.saving.save_model`."""
    include_optimizer = kwargs.pop("include_optimizer", True)
    kwargs.pop("save_format", None)  # Keras 2's argument; the name decides, as in Keras 3
    if kwargs:
        raise ValueError(f"save: unexpected keyword argument(s) {sorted(kwargs)}")
    filepath = os.fspath(filepath)
    is_h5 = filepath.endswith((".h5", ".hdf5"))
    if not is_h5 and not filepath.endswith(".keras"):
        raise ValueError("save: the filename must end in '.keras' (Keras 3's model file) or "
                         f"'.h5' (Keras 2's legacy file). Received: filepath={filepath}")
    if zipped is False:
        raise ValueError("save: zipped=False (an unzipped model folder) is not supported; "
                         "kiln writes the .keras zip")
    if os.path.exists(filepath) and not overwrite and not ask_to_proceed_with_overwrite(
            filepath):
        return
    if is_h5:
        legacy_h5.save_legacy_h5(model, filepath, include_optimizer=include_optimizer)
    else:
        keras_file.save_keras_file(model, filepath)


def load_model(filepath, custom_objects=None, compile=True, safe_mode=True):  # noqa: A002
    """Keras 3's `keras.models.load_model` for .keras files (and the folders Keras writes with
    zipped=False) and Keras 2 .h5 files."""
    filepath = os.fspath(filepath)
    if not os.path.exists(filepath):
        raise ValueError(f"load_model: file not found: filepath={filepath}. Please ensure "
                         "the file is an accessible `.keras` zip file.")
    loader = _loader_for(filepath)
    try:
        return loader(filepath, custom_objects, compile, safe_mode)
    except _DAMAGE as error:
        # A file damaged past the checks (a config of the wrong types, HDF5 internals): still
        # the ValueError a user can catch, naming the file.
        raise ValueError(f"load_model: {filepath} is damaged or not a Keras model file "
                         f"({type(error).__name__}: {error})") from error


def _loader_for(filepath):
    """The reader of the file's format, known from its content."""
    if os.path.isdir(filepath):
        if not os.path.exists(os.path.join(filepath, keras_file.CONFIG)):
            raise ValueError(f"load_model: {filepath} is a folder without a "
                             f"'{keras_file.CONFIG}', so not a Keras 3 model saved with "
                             "zipped=False (a TensorFlow SavedModel is not read); kiln loads "
                             ".keras files, their unzipped folders and Keras 2 .h5 files")
        return keras_file.load_keras_file
    with open(filepath, "rb") as file:
        head = file.read(8)
    if zipfile.is_zipfile(filepath):
        return keras_file.load_keras_file
    if head == _H5_SIGNATURE:
        return legacy_h5.load_legacy_h5
    raise ValueError(f"load_model: {filepath} is neither a Keras 3 .keras zip nor a Keras 2 "
                     "HDF5 (.h5) model file")


def model_to_json(model, **kwargs):
    """The architecture (no weights, no compile state) as Keras 3's JSON."""
    if not has_graph(model):
        raise ValueError(f"to_json: {model.context} is a subclassed model, whose architecture "
                         "has no config")
    config = serialize_model(model)
    config.pop("compile_config", None)
    return json.dumps(config, **kwargs)


def model_from_json(json_string, custom_objects=None):
    """A new model (fresh weights) from `model.to_json()` (Keras 3 or Keras 2 JSON)."""
    try:
        config = json.loads(json_string)
    except (TypeError, json.JSONDecodeError, RecursionError) as error:
        raise ValueError(f"model_from_json: the argument is not valid JSON: {error}") from error
    try:
        return deserialize_layer(config, custom_objects, True, "model_from_json")
    except _DAMAGE as error:
        raise ValueError(f"model_from_json: invalid model config ({type(error).__name__}: "
                         f"{error})") from error


def model_from_config(config, custom_objects=None):
    """A model from a config dict ({"class_name", "config"}), as keras.models.model_from_config."""
    return deserialize_layer(config, custom_objects, True, "model_from_config")


def clone_model(model, input_tensors=None, clone_function=None, **kwargs):
    """A new model of the same architecture with fresh weights (`keras.models.clone_model`):
    every layer made again from its config, under the same names."""
    for argument, value in (("input_tensors", input_tensors),
                            ("clone_function", clone_function), *kwargs.items()):
        if value is not None:
            raise ValueError(f"clone_model: argument {argument} is not supported yet, "
                             f"expected None, got {value!r}")
    if not has_graph(model):
        raise ValueError(f"clone_model: {model.context} is a subclassed model, whose "
                         "architecture has no config")
    return type(model).from_config(model.get_config())
