"""Keras 2's layer-weights groups: a legacy `.h5` model file's `model_weights` group and a Keras 2
weights file (`model.save_weights('w.h5')`), which is the same group at the file's root.

    attrs layer_names       every layer's name, in the model's order
    <layer name>            attrs weight_names ("conv2d/kernel:0", ...): the layer's weights,
                            trainable ones first, each a dataset at that path

Reading matches the model's layers that have weights with the file's, in order (Keras 2's
default: names may differ) or by name (`by_name=True`); every count and shape is checked before
anything is assigned. `skip_mismatch=True` (by order or by name, as Keras 3) skips mismatching
weights with a warning instead of raising (a layer's whole set when its count differs).
"""

import warnings

import h5py
import numpy as np

from .atomic_file import atomic_path
from .h5_reading import get_group, has_entry, read_array

KERAS_VERSION, BACKEND = "2.15.0", "tensorflow"  # what tf.keras 2 writes; Keras 3 reads it


def attribute(owner, name):
    """A string or list-of-strings attribute (Keras splits long lists over name0, name1...)."""
    value = owner.attrs.get(name)
    if value is None:
        chunks, index = [], 0
        while f"{name}{index}" in owner.attrs:
            chunks.extend(owner.attrs[f"{name}{index}"])
            index += 1
        value = chunks if index else None
    if isinstance(value, bytes):
        value = value.decode("utf8")
    if isinstance(value, (np.ndarray, list)):
        value = [v.decode("utf8") if isinstance(v, bytes) else str(v) for v in value]
    return value


def legacy_variables(layer):
    """A layer's weights in Keras 2's order: trainable ones, then the others (a nested model's
    whole list, a frozen layer's all non-trainable), as Keras's `_legacy_weights`."""
    return list(layer.trainable_weights) + list(layer.non_trainable_weights)


def write_layer_weights(group, model):
    """Fills `group` with the model's layers' weights as Keras 2 lays them out."""
    layers = [(layer.name, [(f"{w.path}:0", w.numpy()) for w in legacy_variables(layer)])
              for layer in model.layers]
    group.attrs["layer_names"] = [name.encode("utf8") for name, _ in layers]
    group.attrs["backend"] = BACKEND.encode("utf8")
    group.attrs["keras_version"] = KERAS_VERSION.encode("utf8")
    for name, weights in sorted(layers):
        write_named_arrays(group.create_group(name), weights)


def write_named_arrays(group, weights):
    """[(name, array)] as datasets, their names in the `weight_names` attribute."""
    group.attrs["weight_names"] = [name.encode("utf8") for name, _ in weights]
    for name, value in weights:
        group[name] = value


def load_layer_weights(model, group, filepath, by_name=False, skip_mismatch=False,
                       caller="load_model"):
    """Reads a Keras 2 layer-weights group into `model` (see the module docstring)."""
    saved = {}
    for name in attribute(group, "layer_names") or []:
        layer_group = get_group(group, name, filepath)
        weight_names = [] if layer_group is None else (
            attribute(layer_group, "weight_names") or [])
        if weight_names:
            saved[name] = (layer_group, weight_names)
    layers = [layer for layer in model.layers if legacy_variables(layer)]
    if by_name:
        pairs = [(layer, layer.name, saved[layer.name]) for layer in layers
                 if layer.name in saved]
    else:
        if len(saved) != len(layers):
            raise ValueError(f"{caller}: {filepath} holds weights for {len(saved)} layers "
                             f"{list(saved)}, the model has {len(layers)} layers with weights "
                             f"{[layer.name for layer in layers]}")
        pairs = [(layer, name, entry) for layer, (name, entry)
                 in zip(layers, saved.items(), strict=True)]
    assignments, errors = [], []
    for layer, name, (layer_group, weight_names) in pairs:
        errors.extend(_check(layer, name, layer_group, weight_names, filepath, assignments,
                             by_name=by_name))
    if errors and not skip_mismatch:
        raise ValueError(f"{caller}: {filepath}: " + "; ".join(errors))
    if errors:
        warnings.warn(f"{caller}: skipping layers that do not match {filepath}: "
                      + "; ".join(errors), stacklevel=3)
    for weight, value in assignments:
        weight.assign(value)


def _check(layer, name, layer_group, weight_names, filepath, assignments, by_name):
    """The layer's mismatches; its matching weights go to `assignments`. As Keras 3: a count
    mismatch skips the whole layer by name and is an error by order (even with
    skip_mismatch); a shape mismatch skips only that weight, the layer's others still load."""
    expected = legacy_variables(layer)
    if len(weight_names) != len(expected):
        message = (f"layer '{name}' holds {len(weight_names)} weights, {layer.context} "
                   f"expects {len(expected)} {[w.shape for w in expected]}")
        if not by_name:
            raise ValueError(f"load_weights: {filepath}: {message}")
        return [message]
    errors = []
    for weight, weight_name in zip(expected, weight_names, strict=True):
        value = read_array(layer_group, weight_name, filepath,
                           owner=f"{layer.context}, weight '{weight.name}'")
        if value.shape != weight.shape:
            errors.append(f"'{name}/{weight_name}' has shape {value.shape}, {layer.context} "
                          f"expects {weight.shape} for '{weight.name}'")
        else:
            assignments.append((weight, value))
    return errors


# -- Keras 2 weights files --------------------------------------------------------------------
def save_legacy_weights(model, filepath):
    """`model.save_weights('w.h5')` as Keras 2 wrote it (layer groups at the root)."""
    model.weights  # noqa: B018 (builds a model whose input shape is known)
    with atomic_path(filepath, "save_weights") as temporary:
        with h5py.File(temporary, "w") as h5:
            write_layer_weights(h5, model)


def load_legacy_weights(model, filepath, by_name=False, skip_mismatch=False):
    """`model.load_weights('w.h5')` for a Keras 2 weights file, or the weights of a Keras 2
    model file (its `model_weights` group)."""
    model.weights  # noqa: B018 (builds a model whose input shape is known)
    if not model.built:
        raise ValueError(f"load_weights: {model.context} has not been built yet: call it on "
                         "data or use build() first, so that its weights exist")
    try:
        h5 = h5py.File(filepath, "r")
    except OSError as error:
        raise OSError(f"load_weights: {filepath} is not a readable HDF5 file "
                      f"({error})") from error  # OSError, as Keras's (h5py's)
    with h5:
        group = get_group(h5, "model_weights", filepath) if has_entry(
            h5, "model_weights", filepath) else h5
        if "layer_names" not in group.attrs and "layer_names0" not in group.attrs:
            raise ValueError(f"load_weights: {filepath} is not a Keras 2 weights file (no "
                             "layer_names attribute)")
        load_layer_weights(model, group, filepath, by_name, skip_mismatch, "load_weights")
