"""Keras 2's legacy HDF5 model file (`model.save('x.h5')`, as the classic Keras 2 examples end),
written as Keras 2 / tf.keras wrote it and read from Keras 2, tf.keras, Keras 3 and kiln.

    attrs   keras_version, backend, model_config (JSON: {"class_name", "config"} in Keras 2's
            form: no 'module', initializers as {"class_name", "config"}, an InputLayer's
            batch_input_shape, layer calls as [[layer, node, tensor, kwargs], ...], a
            registered class named "package>Name"),
            training_config (JSON: loss, metrics, weighted_metrics, loss_weights,
            optimizer_config; a function by its (registered) name, as Keras 2 wrote it)
    model_weights           attrs layer_names (every layer), backend, keras_version
        <layer name>        attrs weight_names ("conv2d/kernel:0", ...): the layer's weights,
                            trainable first, each a dataset at that path
    optimizer_weights       attrs weight_names: tf.keras's optimizer weights: "<Optimizer>/
                            iter:0", then each slot for every trainable weight, slot by slot
                            ("Adam/conv2d/kernel/m:0", ..., "Adam/conv2d/kernel/v:0", ...)

Loading matches layers with weights in order, as Keras 2 does (layer names may differ), checks
every count and shape before assigning anything, and reads the optimizer in tf.keras's layout
above or in Keras 3's (what Keras 3 writes into a legacy file: its own variable list).
"""

import json
import os
import warnings

import h5py
import numpy as np

from .atomic_file import atomic_path
from .h5_reading import get_group, has_entry, read_array
from .legacy_weights import (
    BACKEND,
    KERAS_VERSION,
    attribute,
    load_layer_weights,
    write_layer_weights,
    write_named_arrays,
)
from .model_config import compile_from_config, has_graph, serialize_model
from .optimizer_variables import (
    check_keras_variables,
    keras_variables,
    set_keras_variables,
    slot_order,
)
from .serialization import deserialize_layer

# Keras 3's slot names -> tf.keras 2's
_KERAS2_SLOTS = {"momentum": "momentum", "velocity": "v", "velocity_hat": "vhat",
                 "accumulator": "accumulator", "accumulated_grad": "accum_grad",
                 "accumulated_delta_var": "accum_var", "m": "m", "norm": "v",
                 "average_gradient": "mg"}
_KERAS2_SLOTS_BY_OPTIMIZER = {"Adam": {"momentum": "m"}, "AdamW": {"momentum": "m"},
                              "Nadam": {"momentum": "m"}, "RMSprop": {"velocity": "rms"}}


# -- writing ----------------------------------------------------------------------------------
def keras2_config(value):
    """A Keras 3 config in Keras 2's form (see the module docstring)."""
    if isinstance(value, list):
        return [keras2_config(item) for item in value]
    if not isinstance(value, dict):
        return value
    if value.get("class_name") in ("DTypePolicy", "FloatDTypePolicy"):
        return (value.get("config") or {}).get("name", "float32")
    if value.get("class_name") == "__keras_tensor__":
        return value
    converted = {key: keras2_config(item) for key, item in value.items()
                 if key not in ("module", "registered_name", "build_config")}
    registered = value.get("registered_name")
    if isinstance(registered, str) and ">" in registered:
        converted["class_name"] = registered  # a registered class: "package>Name"
    if value.get("class_name") == "InputLayer" and "batch_shape" in converted.get("config", {}):
        inner = dict(converted["config"])
        inner["batch_input_shape"] = inner.pop("batch_shape")
        inner.pop("optional", None)
        converted["config"] = inner
    if value.get("class_name") == "TimeDistributed" and isinstance(value.get("config"), dict):
        # Keras 3 writes a wrapper's layer as its own get_config() does (module, dtype
        # policy, build_config) and reads it back only so
        converted["config"] = {**converted["config"], "layer": value["config"].get("layer")}
    if "inbound_nodes" in converted:
        converted["inbound_nodes"] = [_keras2_node(node) for node in value["inbound_nodes"]]
    for key in ("input_layers", "output_layers"):
        if isinstance(converted.get(key), list) and converted[key] and \
                isinstance(converted[key][0], str):
            converted[key] = [converted[key]]  # Keras 2 always lists them
    return converted


def _function_names(value):
    """Compile arguments with each function config as its name (Keras 2's training_config)."""
    if isinstance(value, list):
        return [_function_names(item) for item in value]
    if isinstance(value, dict) and value.get("class_name") == "function":
        return value.get("config")
    if isinstance(value, dict) and "class_name" not in value:
        return {key: _function_names(item) for key, item in value.items()}
    return value


def _keras2_node(node):
    tensors = []

    def collect(structure):
        if isinstance(structure, dict) and structure.get("class_name") == "__keras_tensor__":
            tensors.append(structure["config"]["keras_history"])
        elif isinstance(structure, list):
            for item in structure:
                collect(item)

    collect(node.get("args", []))
    # Keras 2 calls a recurrent layer on [sequences, *initial states]
    collect((node.get("kwargs") or {}).get("initial_state") or [])
    kwargs = {key: value for key, value in (node.get("kwargs") or {}).items()
              if not isinstance(value, dict) and key != "initial_state"}
    return [[*history, kwargs] for history in tensors]


def save_legacy_h5(model, filepath, include_optimizer=True):
    if not has_graph(model):
        raise ValueError(f"save: {model.context} is a subclassed model, which Keras 2's .h5 "
                         "format cannot describe (as in Keras 3); save it to a .keras file")
    entry = serialize_model(model)  # everything is read before the file is opened
    model_config = {"class_name": entry["class_name"],
                    "config": keras2_config(entry["config"])}
    training_config = None
    if include_optimizer and entry.get("compile_config"):
        compiled = dict(entry["compile_config"])
        optimizer = compiled.pop("optimizer")
        training_config = {key: keras2_config(_function_names(compiled[key])) for key in (
            "loss", "metrics", "weighted_metrics", "loss_weights")}
        training_config["optimizer_config"] = {"class_name": optimizer["class_name"],
                                               "config": optimizer["config"]}
    optimizer_weights = _keras2_optimizer_weights(model) if training_config else []
    with atomic_path(filepath, "save") as temporary:
        with h5py.File(temporary, "w") as h5:
            h5.attrs["keras_version"] = KERAS_VERSION
            h5.attrs["backend"] = BACKEND
            h5.attrs["model_config"] = json.dumps(model_config).encode("utf8")
            if training_config is not None:
                h5.attrs["training_config"] = json.dumps(training_config).encode("utf8")
            write_layer_weights(h5.create_group("model_weights"), model)
            if optimizer_weights:
                write_named_arrays(h5.create_group("optimizer_weights"), optimizer_weights)


def _keras2_optimizer_weights(model):
    """[(tf.keras weight name, value)]: iter, then each slot for every trainable weight."""
    optimizer = model.optimizer
    values = keras_variables(model)
    prefix = type(optimizer).__name__
    weights = [(f"{prefix}/iter:0", np.asarray(values[0], np.int64))]
    fixed = 1 + (optimizer._schedule is None)
    trainable = list(model.trainable_weights)
    if len(values) == fixed:
        return weights
    renames = {**_KERAS2_SLOTS, **_KERAS2_SLOTS_BY_OPTIMIZER.get(prefix, {})}
    index = fixed
    for group in slot_order(optimizer, optimizer._updater.slot_names()):
        per_slot = {name: [] for name in group}
        for weight in trainable:
            for name in group:  # Keras 3 interleaves a group's slots per weight
                per_slot[name].append((weight, values[index]))
                index += 1
        for name in group:  # tf.keras lists one slot for every weight, then the next
            weights.extend((f"{prefix}/{weight.path}/{renames[name]}:0", value)
                           for weight, value in per_slot[name])
    return weights


# -- reading ----------------------------------------------------------------------------------
def _json_attribute(h5, name, filepath):
    text = attribute(h5, name)
    if text is None:
        return None
    try:
        return json.loads(text)
    except (TypeError, json.JSONDecodeError) as error:
        raise ValueError(f"load_model: {filepath}: the '{name}' attribute is not valid JSON: "
                         f"{error}") from error


def load_legacy_h5(filepath, custom_objects=None, compile=True, safe_mode=True):  # noqa: A002
    try:
        h5 = h5py.File(filepath, "r")
    except OSError as error:
        raise ValueError(f"load_model: {filepath} is not a readable HDF5 file "
                         f"({error})") from error
    with h5:
        model_config = _json_attribute(h5, "model_config", filepath)
        if not isinstance(model_config, dict):
            raise ValueError(f"load_model: {filepath} is an HDF5 file without a model_config "
                             "attribute: not a Keras model file (a weights file? use "
                             "load_weights)")
        model = deserialize_layer(model_config, custom_objects, safe_mode,
                                  f"load_model: {filepath}")
        _load_model_weights(model, h5, filepath)
        training_config = _json_attribute(h5, "training_config", filepath)
        if compile and isinstance(training_config, dict):
            try:
                compile_from_config(model, _compile_config(training_config), custom_objects)
            except (ValueError, TypeError) as error:
                warnings.warn(f"load_model: {filepath}: the model could not be compiled from "
                              f"its training_config ({error}); it is returned uncompiled",
                              stacklevel=3)
                return model
            if has_entry(h5, "optimizer_weights", filepath):
                _load_optimizer(model, h5, filepath)
    return model


def _compile_config(training_config):
    optimizer = training_config.get("optimizer_config") or "rmsprop"
    metrics = training_config.get("metrics")
    if isinstance(metrics, list):  # tf.keras saved metric objects as MeanMetricWrapper dicts
        metrics = [m["config"].get("name") if isinstance(m, dict) and
                   m.get("class_name") == "MeanMetricWrapper" else m for m in metrics]
    return {"optimizer": optimizer, "loss": training_config.get("loss"),
            "loss_weights": training_config.get("loss_weights"), "metrics": metrics,
            "weighted_metrics": training_config.get("weighted_metrics")}


def _load_model_weights(model, h5, filepath):
    group = get_group(h5, "model_weights", filepath)
    if group is None:
        raise ValueError(f"load_model: {filepath} has no 'model_weights' group")
    load_layer_weights(model, group, filepath)


def _load_optimizer(model, h5, filepath):
    group = get_group(h5, "optimizer_weights", filepath)
    names = attribute(group, "weight_names") or []
    values = [read_array(group, name, filepath) for name in names]
    optimizer = model.optimizer
    # Keras 3 writes its own variable list ("adam/iteration", "adam/learning_rate", ...);
    # Keras 2 its optimizer's weights, slot by slot
    if values and not any(os.path.basename(name).startswith("iteration") for name in names):
        values = _from_keras2_order(model, values)
    problem = check_keras_variables(model, values, f"load_model: {filepath}") if values \
        else "no optimizer weights"
    if problem is not None:
        warnings.warn(f"Skipping variable loading for optimizer '{optimizer.name}': "
                      f"{problem}", stacklevel=4)
        return
    set_keras_variables(model, values)


def _from_keras2_order(model, values):
    """Keras 2's [iterations, slot by slot] as Keras 3's [iteration, learning_rate,
    interleaved]. tf.keras saved `iter` first; Keras 2.2's RMSprop and Adagrad saved no
    iteration count (it restarts at 0 then, as it did in Keras 2)."""
    optimizer = model.optimizer
    counted = np.ndim(values[0]) == 0
    head = [values[0] if counted else np.asarray(0, np.int64)]
    if optimizer._schedule is None:
        head.append(np.asarray(float(np.asarray(optimizer.learning_rate)), np.float32))
    rest = values[1:] if counted else values
    groups = slot_order(optimizer, optimizer._updater.slot_names())
    count = len(model.trainable_weights)
    if not rest or len(rest) != sum(len(g) for g in groups) * count:
        return head + rest  # the count check reports it (or there are no slots)
    by_slot, offset = {}, 0
    for group in groups:
        for name in group:
            by_slot[name] = rest[offset:offset + count]
            offset += count
    ordered = []
    for group in groups:
        for index in range(count):
            ordered.extend(by_slot[name][index] for name in group)
    return head + ordered
