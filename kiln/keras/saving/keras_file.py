"""The Keras 3 `.keras` model file: a zip of `metadata.json`, `config.json` and
`model.weights.h5`, written and read as Keras 3 does (keras/src/saving/saving_lib.py).

    metadata.json       {"keras_version", "date_saved"}
    config.json         the model's serialization (model_config.serialize_model): module,
                        class_name, config, registered_name, build_config, compile_config
    model.weights.h5    the weights file's layout (weights_file.py): layers by path, then
                        `optimizer/vars` holding the optimizer's variables in Keras's own
                        order and shapes (optimizer_variables.py), so Keras resumes kiln's
                        training and kiln resumes Keras's

Reading trusts nothing in the file: entries are read by name only (absolute or `..` names
refused), sizes are checked against Keras's decompression-bomb limit, the config is JSON whose
class names resolve through kiln's tables (serialization.py), and the weights are checked
against the rebuilt model before any is assigned. A failure is a ValueError naming the file.
"""

import datetime
import io
import json
import os
import warnings
import zipfile

import h5py
import numpy as np

from .atomic_file import atomic_path
from .h5_reading import array_keys, get_group, has_entry, read_array
from .model_config import compile_from_config, has_graph, serialize_model
from .optimizer_variables import check_keras_variables, keras_variables, set_keras_variables
from .saveable_paths import is_optimizer, object_name, own_variables, saveable_paths
from .serialization import deserialize_layer
from .subclassed_models import build_from_config

KERAS_VERSION = "3.15.1"  # the Keras 3 file format kiln writes (and reads)
CONFIG, METADATA, WEIGHTS = "config.json", "metadata.json", "model.weights.h5"
_MAX_EXPANSION, _BOMB_FLOOR_BYTES = 100, 1 << 32


def save_keras_file(model, filepath):
    """Writes `model` to `filepath` (a .keras zip), atomically."""
    if not has_graph(model) and not model.built:
        raise ValueError(f"save: subclassed model {model.context} is not built yet: call it "
                         "on data (fit / predict) or build(input_shape) before saving it")
    # Everything is serialized before the file is opened: a failure writes nothing.
    config_json = json.dumps(serialize_model(model))
    metadata_json = json.dumps({
        "keras_version": KERAS_VERSION,
        "date_saved": datetime.datetime.now().strftime("%Y-%m-%d@%H:%M:%S")})
    weights = _weights_h5_bytes(model)
    with atomic_path(filepath, "save") as temporary:
        with zipfile.ZipFile(temporary, "w") as archive:
            archive.writestr(METADATA, metadata_json)
            archive.writestr(CONFIG, config_json)
            archive.writestr(WEIGHTS, weights)


def _weights_h5_bytes(model):
    buffer = io.BytesIO()
    with h5py.File(buffer, "w") as h5_file:
        for path, saveable in saveable_paths(model):
            group = h5_file.create_group(f"{path}/vars" if path else "vars")
            group.attrs["name"] = object_name(saveable)
            if is_optimizer(saveable):
                values = keras_variables(model)
            else:
                values = [weight.numpy() for weight in own_variables(saveable)]
            for index, value in enumerate(values):
                group[str(index)] = value
    return buffer.getvalue()


# -- reading ----------------------------------------------------------------------------------
def read_archive(filepath):
    """(config dict, metadata dict, weights bytes) of a .keras file, checked."""
    try:
        archive = zipfile.ZipFile(filepath, "r")
    except zipfile.BadZipFile as error:
        raise ValueError(f"load_model: {filepath} is not a Keras model file (.keras zip): "
                         f"{error}") from error
    with archive:
        for info in archive.infolist():
            name = info.filename
            if name.startswith(("/", "\\")) or ".." in name.replace("\\", "/").split("/") \
                    or ":" in name:
                raise ValueError(f"load_model: {filepath} has an entry with an unsafe path "
                                 f"'{name}'; refusing to read it")
        config = _read_json(archive, CONFIG, filepath)
        metadata = _read_json(archive, METADATA, filepath, required=False) or {}
        weights = _read_entry(archive, WEIGHTS, filepath)
    if not isinstance(config, dict):
        raise ValueError(f"load_model: {filepath}: '{CONFIG}' must hold a JSON object, got "
                         f"{type(config).__name__}")
    return config, metadata, weights


def read_folder(folder):
    """(config dict, metadata dict, weights bytes) of a model folder Keras wrote with
    `save(..., zipped=False)`: the zip's entries as files. Only those names are read, and only
    as regular files inside the folder (a symbolic link could lead anywhere)."""
    entries = {}
    for name in (CONFIG, METADATA, WEIGHTS):
        path = os.path.join(folder, name)
        if os.path.islink(path) or (os.path.exists(path) and not os.path.isfile(path)):
            raise ValueError(f"load_model: {folder}: '{name}' is not a regular file; refusing "
                             "to read it")
        if not os.path.exists(path):
            if name == METADATA:
                continue
            raise ValueError(f"load_model: {folder} has no '{name}'; a Keras 3 model folder "
                             f"(save(..., zipped=False)) holds {METADATA}, {CONFIG} and "
                             f"{WEIGHTS}")
        with open(path, "rb") as file:
            entries[name] = file.read()
    config, metadata = (_parse_json(entries[name], name, folder) if name in entries else None
                        for name in (CONFIG, METADATA))
    if not isinstance(config, dict):
        raise ValueError(f"load_model: {folder}: '{CONFIG}' must hold a JSON object, got "
                         f"{type(config).__name__}")
    return config, metadata or {}, entries[WEIGHTS]


def _read_entry(archive, name, filepath, required=True):
    try:
        info = archive.getinfo(name)
    except KeyError:
        if not required:
            return None
        raise ValueError(f"load_model: {filepath} has no '{name}' entry; a Keras 3 model file "
                         f"holds {METADATA}, {CONFIG} and {WEIGHTS}") from None
    if info.file_size > _BOMB_FLOOR_BYTES and info.file_size > _MAX_EXPANSION * info.compress_size:
        raise ValueError(f"load_model: {filepath}: '{name}' declares {info.file_size} bytes "
                         f"but stores {info.compress_size}; refusing a likely decompression "
                         "bomb")
    try:
        with archive.open(info) as member:
            return member.read()
    except (zipfile.BadZipFile, OSError, EOFError) as error:  # truncated or corrupted
        raise ValueError(f"load_model: {filepath}: entry '{name}' cannot be read: "
                         f"{error}") from error


def _read_json(archive, name, filepath, required=True):
    data = _read_entry(archive, name, filepath, required)
    return None if data is None else _parse_json(data, name, filepath)


def _parse_json(data, name, filepath):
    try:
        return json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise ValueError(f"load_model: {filepath}: '{name}' is not valid JSON: "
                         f"{error}") from error


def load_keras_file(filepath, custom_objects=None, compile=True, safe_mode=True):  # noqa: A002
    """A kiln model from a .keras file written by Keras 3 or kiln (or the folder Keras writes
    with zipped=False)."""
    config, _, weights = (read_folder if os.path.isdir(filepath) else read_archive)(filepath)
    model = deserialize_layer(config, custom_objects, safe_mode, f"load_model: {filepath}")
    if not has_graph(model) and not model.built:
        build_from_config(model, config.get("build_config"), f"load_model: {filepath}")
    try:
        h5_file = h5py.File(io.BytesIO(weights), "r")
    except OSError as error:
        raise ValueError(f"load_model: {filepath}: '{WEIGHTS}' is not a readable HDF5 file "
                         f"({error})") from error
    with h5_file:
        _load_layer_weights(model, h5_file, f"{filepath} ({WEIGHTS})")
        compile_config = config.get("compile_config")
        if compile and compile_config:
            try:
                compile_from_config(model, compile_config, custom_objects)
            except (ValueError, TypeError) as error:
                # as Keras: the model is returned uncompiled, with a warning
                warnings.warn(f"load_model: {filepath}: the model could not be compiled from "
                              f"its compile_config ({error}); it is returned uncompiled, "
                              "call compile() before training", stacklevel=3)
                return model
            _load_optimizer(model, h5_file, filepath)
    return model


def _load_layer_weights(model, h5_file, where):
    """Checks every layer's variables against the file, then assigns them all."""
    from .weights_file import _check_layer  # one check for both file kinds

    if not has_entry(h5_file, "vars", where) and not has_entry(h5_file, "layers", where):
        raise ValueError(f"load_model: {where} has neither a 'vars' nor a 'layers' group: it "
                         "is not a Keras weights file")
    assignments, errors = [], []
    for path, saveable in saveable_paths(model):
        if is_optimizer(saveable):
            continue
        group = get_group(h5_file, f"{path}/vars" if path else "vars", where)
        error = _check_layer(saveable, path, group, where, assignments)
        if error:
            errors.append(error)
    if errors:
        raise ValueError(f"load_model: {len(errors)} layer(s) of {model.name} do not match "
                         f"{where}:\n  " + "\n  ".join(errors))
    for weight, value in assignments:
        weight.assign(value)


def _load_optimizer(model, h5_file, filepath):
    group = get_group(h5_file, "optimizer/vars", filepath)
    keys = sorted(array_keys(group), key=lambda key: int(key) if key.isdigit() else -1)
    if not keys:
        return
    if keys != [str(index) for index in range(len(keys))]:
        raise ValueError(f"load_model: {filepath}: optimizer variables must be named 0..n-1, "
                         f"got {keys[:5]}")
    values = [np.asarray(read_array(group, key, filepath)) for key in keys]
    problem = check_keras_variables(model, values, f"load_model: {filepath}")
    if problem is not None:
        # as Keras: a mismatching optimizer is skipped with a warning, training starts fresh
        warnings.warn(f"Skipping variable loading for optimizer "
                      f"'{object_name(model.optimizer)}': {problem}", stacklevel=4)
        return
    set_keras_variables(model, values)
