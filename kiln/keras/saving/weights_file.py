"""`model.save_weights` / `model.load_weights`: the Keras 3 `.weights.h5` file, both ways.

The file is the one Keras 3 writes (keras/src/saving/saving_lib.py, `H5IOStore`), so a kiln
model's weights open in Keras and a Keras model's weights open in kiln:

    vars                      attrs {"name": <model name>}  (the model's own variables: none)
    layers/<path>/vars        attrs {"name": <layer name>}, datasets "0", "1", ... holding the
                              layer's own variables (trainable ones first, in creation order)
    optimizer/vars            attrs {"name": <optimizer name>}, datasets "0", "1", ...: the
                              optimizer's variables as Keras lists them (iterations, learning
                              rate, each slot of each trainable weight in its shape) when
                              compiled; optimizer_variables.py converts from and to kiln's
                              arenas, so Keras resumes kiln's training and kiln Keras's

BackupAndRestore writes one variant (`optimizer_layout="kiln"`): the optimizer group holds
`optimizer.get_state()` as it is (kiln's arenas, one array per slot over all weights) with their
names in a `state_names` attribute. It needs no conversion, and restores exactly into a fresh
process's optimizer before its first step. Keras skips such an optimizer group with a warning.

Layers are found by path, not by name (saveable_paths.py explains the paths). Every group gets
its `name` attribute even for a layer without variables, as Keras writes it.

Loading checks every layer (count and shapes) before assigning anything, so a mismatching file
leaves the model as it was; with `skip_mismatch=True` the mismatching layers are skipped with a
warning and the rest is loaded, as in Keras. Writing goes through a temporary file and a rename
(atomic_file.py): a crash mid-write never leaves a truncated file under the final name.
"""

import io
import os
import warnings
import zipfile

import h5py
import numpy as np

from .atomic_file import atomic_path
from .h5_reading import array_keys, get_group, has_entry, read_array
from .optimizer_variables import check_keras_variables, keras_variables, set_keras_variables
from .saveable_paths import is_optimizer, object_name, own_variables, saveable_paths

WEIGHTS_SUFFIX = ".weights.h5"
_ARCHIVE_WEIGHTS = "model.weights.h5"  # the weights inside a Keras 3 .keras zip


def save_weights(model, filepath, overwrite=True, root_attributes=None,
                 optimizer_layout="keras"):
    """Writes `model`'s weights (and its optimizer's state, if compiled) to `filepath`.

    `root_attributes` and `optimizer_layout="kiln"` are for kiln's own use (BackupAndRestore's
    epoch counter goes on the file's root, written in the same atomic step as the weights)."""
    filepath = _checked_path(model, filepath, "save_weights")
    if os.path.exists(filepath) and not overwrite and not ask_to_proceed_with_overwrite(
            filepath):
        return
    # Read every value before opening the file: a failure here writes nothing.
    entries = [(path, saveable, _values_to_save(model, saveable, optimizer_layout))
               for path, saveable in saveable_paths(model)]
    with atomic_path(filepath, "save_weights") as temporary:
        with h5py.File(temporary, "w") as h5_file:
            h5_file.attrs.update(root_attributes or {})
            for path, saveable, values in entries:
                group = h5_file.create_group(f"{path}/vars" if path else "vars")
                group.attrs["name"] = object_name(saveable)
                if isinstance(values, dict):  # kiln's named optimizer state
                    if values:
                        group.attrs["state_names"] = list(values)
                    values = values.values()
                for index, value in enumerate(values):
                    group[str(index)] = value


def load_weights(model, filepath, skip_mismatch=False, **kwargs):
    """Reads a `.weights.h5` file written by Keras 3 or kiln into `model`, or the weights of a
    Keras 3 `.keras` model file (its `model.weights.h5` member), as Keras's load_weights."""
    filepath = os.fspath(filepath)
    if kwargs:
        # Keras 3 takes `by_name` only for Keras 2 .h5 files (model.load_weights reads those)
        raise ValueError(f"load_weights: invalid keyword arguments {sorted(kwargs)} for "
                         f"{filepath}; Keras 2's by_name applies to legacy .h5 weights files "
                         f"only, and .weights.h5 / .keras files match layers by path")
    if filepath.endswith(".keras"):
        _require_built(model, "load_weights")
        h5_source = read_keras_archive_weights(filepath)
    else:
        h5_source = _checked_path(model, filepath, "load_weights")
    try:
        h5_file = h5py.File(h5_source, "r")
    except FileNotFoundError:
        raise
    except OSError as error:
        raise OSError(f"load_weights: {filepath} is not a readable HDF5 weights file "
                      f"({error})") from error
    with h5_file:
        _refuse_other_formats(h5_file, filepath)
        assignments, errors, optimizer_entry = [], [], None
        for path, saveable in saveable_paths(model):
            group = get_group(h5_file, f"{path}/vars" if path else "vars", filepath)
            if is_optimizer(saveable):
                # read now, with the layers: a damaged file fails before anything is assigned
                optimizer_entry = (saveable, _read_optimizer_state(model, group, filepath))
                continue
            error = _check_layer(saveable, path, group, filepath, assignments)
            if error:
                errors.append(error)
        if errors:
            message = (f"load_weights: {len(errors)} layer(s) of {model.name} do not match "
                       f"{filepath}:\n  " + "\n  ".join(errors))
            if not skip_mismatch:
                raise ValueError(message)
            warnings.warn(message + "\nThese layers keep their weights (skip_mismatch=True).",
                          stacklevel=3)
        for weight, value in assignments:
            weight.assign(value)
        if optimizer_entry is not None and optimizer_entry[1] is not None:
            _set_optimizer_state(model, *optimizer_entry, filepath)


def read_keras_archive_weights(filepath):
    """The `model.weights.h5` member of a `.keras` zip, in memory (a file-like object)."""
    try:
        archive = zipfile.ZipFile(filepath, "r")
    except zipfile.BadZipFile as error:
        raise ValueError(f"load_weights: {filepath} is not a Keras model file (.keras zip): "
                         f"{error}") from error
    with archive:
        try:
            info = archive.getinfo(_ARCHIVE_WEIGHTS)
        except KeyError:
            raise ValueError(f"load_weights: {filepath} has no '{_ARCHIVE_WEIGHTS}' entry; "
                             "kiln reads weights from .keras files that hold them in HDF5, "
                             "as Keras 3 writes them by default") from None
        # Keras's limit against decompression bombs: 4 GiB at most 100 times the stored size
        if info.file_size > 1 << 32 and info.file_size > 100 * info.compress_size:
            raise ValueError(f"load_weights: {filepath}: '{_ARCHIVE_WEIGHTS}' declares "
                             f"{info.file_size} bytes but stores {info.compress_size}; "
                             "refusing to read a likely decompression bomb")
        with archive.open(info) as member:
            return io.BytesIO(member.read())


def ask_to_proceed_with_overwrite(filepath):
    """Keras's prompt when `overwrite=False` and the file exists: True to overwrite."""
    answer = input(f"[WARNING] {filepath} already exists - overwrite? [y/n]").strip().lower()
    while answer not in ("y", "n"):
        answer = input('Enter "y" (overwrite) or "n" (cancel).').strip().lower()
    if answer == "n":
        return False
    print("[TIP] Next time specify overwrite=True!")
    return True


# -- checks -----------------------------------------------------------------------------------
def check_weights_filepath(filepath, caller="save_weights"):
    """Raises the ValueError save_weights / load_weights would raise for this file name (so a
    callback can refuse a path before training rather than after its first epoch)."""
    filepath = os.fspath(filepath)
    if filepath.endswith(WEIGHTS_SUFFIX):
        return filepath
    if filepath.endswith((".h5", ".hdf5")):
        raise ValueError(
            f"{caller}: {filepath} names a Keras 2 legacy HDF5 weights file (.h5); Keras 3 "
            "and kiln read those (load_weights, with by_name / skip_mismatch) but write "
            f"weights only in the Keras 3 format: use a filepath ending in '{WEIGHTS_SUFFIX}'")
    raise ValueError(f"{caller}: the filename must end in '{WEIGHTS_SUFFIX}' (the Keras 3 "
                     f"weights format). Received: filepath={filepath}")


def _checked_path(model, filepath, caller):
    filepath = check_weights_filepath(filepath, caller)
    _require_built(model, caller)
    return filepath


def _require_built(model, caller):
    model.weights  # noqa: B018 (builds a model whose input shape is known, as Keras does)
    if not model.built:
        raise ValueError(f"{caller}: {model.context} has not been built yet: call it on data "
                         "or use build() first, so that its weights exist")


def _refuse_other_formats(h5_file, filepath):
    if "layer_names" in h5_file.attrs or has_entry(h5_file, "model_weights", filepath):
        raise ValueError(f"load_weights: {filepath} holds Keras 2 legacy HDF5 weights "
                         f"(layer_names / model_weights), not the Keras 3 format its "
                         f"'{WEIGHTS_SUFFIX}' name says; give it a name ending in '.h5' to "
                         "read it as Keras 2 weights (Keras 3 also decides by the name)")
    if not has_entry(h5_file, "vars", filepath) and not has_entry(h5_file, "layers", filepath):
        raise ValueError(f"load_weights: {filepath} is an HDF5 file but not a Keras weights "
                         "file (it has neither a 'vars' nor a 'layers' group)")


def _check_layer(layer, path, group, filepath, assignments):
    """Appends (weight, value) pairs to `assignments`; returns an error message or None."""
    expected = own_variables(layer)
    keys = array_keys(group)
    where = f"{layer.context} (group '{path or '/'}')"
    if len(keys) != len(expected):
        return (f"{where} expected {len(expected)} variables "
                f"{[(w.name, w.shape) for w in expected]}, the file has {len(keys)}")
    pairs = []
    for index, weight in enumerate(expected):
        if str(index) not in keys:
            return f"{where}: the file has no variable '{index}' ({weight.name})"
        value = read_array(group, str(index), filepath,
                           owner=f"{layer.context}, weight '{weight.name}'")
        if value.shape != weight.shape:
            return (f"{where}: variable {index} ('{weight.name}') expected shape "
                    f"{weight.shape}, the file has {value.shape}")
        pairs.append((weight, value))
    assignments.extend(pairs)
    return None


# -- values -----------------------------------------------------------------------------------
def _values_to_save(model, saveable, optimizer_layout):
    """A layer's variables, the optimizer's in Keras's order (lists), or kiln's named
    optimizer state (a dict name -> array)."""
    if not is_optimizer(saveable):
        return [w.numpy() for w in own_variables(saveable)]
    if not hasattr(saveable, "get_state"):
        return []
    if optimizer_layout == "kiln":
        return {name: np.asarray(v) for name, v in saveable.get_state().items()}
    return keras_variables(model)


def _read_optimizer_state(model, group, filepath):
    """What to give the optimizer: ("kiln", {name: array}) or ("keras", [arrays]); or None
    (with Keras's warning) to leave it as it is."""
    optimizer = model.optimizer
    keys = array_keys(group)
    if not keys or not hasattr(optimizer, "set_state"):
        return None
    names = [str(name) for name in group.attrs.get("state_names", [])]
    where = f"load_weights: {filepath}"
    if names:  # kiln's named state (BackupAndRestore)
        if len(names) != len(keys):
            problem = f"{len(keys)} variables for {len(names)} names {names}"
        else:
            return "kiln", {name: read_array(group, str(i), filepath)
                            for i, name in enumerate(names)}
    elif sorted(keys, key=_index) != [str(i) for i in range(len(keys))]:
        problem = f"optimizer variables must be named 0..n-1, got {sorted(keys)[:5]}"
    else:
        values = [read_array(group, str(i), filepath) for i in range(len(keys))]
        problem = check_keras_variables(model, values, where)
        if problem is None:
            return "keras", values
    # Keras warns and goes on with a fresh optimizer in this case too.
    warnings.warn(f"Skipping variable loading for optimizer '{object_name(optimizer)}': "
                  f"{problem}", stacklevel=4)
    return None


def _index(key):
    return int(key) if key.isdigit() else -1


def _set_optimizer_state(model, optimizer, state, filepath):
    layout, values = state
    try:
        if layout == "kiln":
            optimizer.set_state(values)
        else:
            set_keras_variables(model, values)
    except (ValueError, TypeError) as error:  # e.g. Adam's state into an SGD: Keras skips too
        warnings.warn(f"Skipping variable loading for optimizer '{object_name(optimizer)}' "
                      f"from {filepath}: {error}", stacklevel=4)
