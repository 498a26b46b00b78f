"""A model's architecture as Keras 3 writes it (`model.get_config()`, `config.json` in a .keras
file) and back: Sequential and Functional models.

Keras 3's layout (keras/src/models/functional.py `get_config` / `functional_from_config`,
sequential.py): a Sequential model lists its layers, InputLayer first; a Functional model lists
every layer with the calls that made the graph (`inbound_nodes`: the call's arguments with each
tensor as {"class_name": "__keras_tensor__", "config": {"keras_history": [layer name, node
index, tensor index]}}) and names its inputs and outputs the same way. Rebuilding calls the
layers again in that order, so the graph, the layer order and the weight paths come out as in
the saved model. Keras 2 configs (no 'module' keys; nodes as [name, node, tensor, kwargs]
lists; a first layer carrying batch_input_shape) are read too.
"""

from ...graph.symbolic import SymbolicTensor
from ..layers.dtype_policies import policy_config
from .serialization import deserialize_layer, serialize_keras_object
from .subclassed_models import subclassed_build_config

# Layers whose saved form carries a build_config in Keras 3 (those that build from a shape)
_BUILT_FROM_SHAPE = frozenset({
    "Conv2D", "Dense", "BatchNormalization", "Flatten", "Add", "Subtract", "Multiply",
    "Average", "Maximum", "Minimum", "Concatenate", "Conv1D", "Conv2DTranspose",
    "DepthwiseConv2D", "SeparableConv2D", "DepthwiseConv1D", "SeparableConv1D",
    "Conv1DTranspose", "UpSampling1D", "ZeroPadding1D", "Cropping1D", "RepeatVector",
    "TimeDistributed"})


def _shape_list(shape):
    return [None if d is None else int(d) for d in shape]


def serialize_layer(layer):
    """A layer's Keras 3 entry: serialize_keras_object plus its build_config."""
    config = serialize_keras_object(layer)
    if not layer._inbound_nodes:
        return config
    users_layer = not type(layer).__module__.startswith("kiln.")
    if users_layer:
        # Keras 3 records the shapes its build() got: those of the first argument of its
        # first call (a tensor, or a list of them)
        args = layer._inbound_nodes[0].call_args
        if args:
            config["build_config"] = {"input_shape": _shapes_of(args[0])}
    elif type(layer).__name__ in _BUILT_FROM_SHAPE:
        tensors = layer._inbound_nodes[0].input_tensors
        shapes = [_shape_list(t.shape) for t in tensors]
        config["build_config"] = {"input_shape": shapes[0] if len(shapes) == 1 else shapes}
    return config


def _shapes_of(structure):
    if isinstance(structure, SymbolicTensor):
        return _shape_list(structure.shape)
    if isinstance(structure, (list, tuple)):
        return [_shapes_of(item) for item in structure]
    return None


def serialize_model(model):
    """The whole model entry of config.json: module, class_name, config, registered_name,
    build_config and (when compiled) compile_config."""
    from ..models import Sequential

    config = serialize_keras_object(model)
    if isinstance(model, Sequential):
        config["module"], config["registered_name"] = "keras", None
        config["build_config"] = {"input_shape": config["config"].get("build_input_shape")}
    elif has_graph(model):
        config["module"] = "keras.src.models.functional"
        config["registered_name"] = "Functional"
        config["build_config"] = {"input_shape": None}
    else:  # subclassed: its class and constructor arguments, as Keras 3
        config["build_config"] = subclassed_build_config(model)
    if getattr(model, "compiled", False):
        config["compile_config"] = compile_config(model)
    return config


# -- Sequential -------------------------------------------------------------------------------
def sequential_config(model):
    model._build_if_possible()
    layers = list(model.layers)
    input_layer = model._input_layer
    entries = [serialize_layer(layer) for layer in layers]
    config = {"name": model.name, "trainable": model.trainable,
              "dtype": policy_config(model.policy_name)}
    if input_layer is not None:
        entries.insert(0, serialize_layer(input_layer))
        config["build_input_shape"] = _shape_list(input_layer.get_config()["batch_shape"])
    config["layers"] = entries
    return config


def sequential_from_config(cls, config, custom_objects=None, safe_mode=True):
    layer_configs = config.get("layers")
    if not isinstance(layer_configs, list):
        raise ValueError(f"Sequential.from_config: 'layers' must be a list of layer configs, "
                         f"got {type(layer_configs).__name__}")
    model = cls(name=config.get("name"), trainable=config.get("trainable", True))
    for index, layer_config in enumerate(layer_configs):
        model.add(deserialize_layer(layer_config, custom_objects, safe_mode,
                                    f"Sequential config, layer {index}"), rebuild=False)
    model._maybe_rebuild()
    if not model.built and config.get("build_input_shape"):
        model.build(tuple(config["build_input_shape"]))
    model._build_if_possible()  # weights exist once the input shape is known, as in Keras
    return model


# -- Functional -------------------------------------------------------------------------------
def _tensor_config(tensor, node_positions):
    layer, node_index, tensor_index = tensor._keras_history
    node = layer._inbound_nodes[node_index]
    return {"class_name": "__keras_tensor__",
            "config": {"shape": _shape_list(tensor.shape), "dtype": tensor.dtype,
                       "keras_history": [layer.name, node_positions[id(node)], tensor_index]}}


def _serialize_arguments(structure, node_positions):
    if isinstance(structure, SymbolicTensor):
        return _tensor_config(structure, node_positions)
    if isinstance(structure, (list, tuple)):
        return [_serialize_arguments(item, node_positions) for item in structure]
    if isinstance(structure, dict):
        return {key: _serialize_arguments(value, node_positions)
                for key, value in structure.items()}
    return structure


def functional_config(model):
    from ..models.functional import has_operations

    if has_operations(model):
        raise ValueError(f"{model.context}: a functional model with keras.ops calls between "
                         "its layers cannot be saved yet; put those calls in a Lambda or a "
                         "Layer subclass (registered with register_keras_serializable)")
    own_nodes = {id(node) for node in model._layer_nodes}
    node_positions = {}  # a node's index among the calls of its layer that this model holds
    for layer in model.layers:
        kept = [node for node in layer._inbound_nodes if id(node) in own_nodes]
        node_positions.update({id(node): index for index, node in enumerate(kept)})
    entries = []
    for layer in model.layers:
        entry = serialize_layer(layer)
        entry["name"] = layer.name
        entry["inbound_nodes"] = [
            {"args": _serialize_arguments(list(node.call_args), node_positions),
             "kwargs": _serialize_arguments(dict(node.call_kwargs), node_positions)}
            for node in layer._inbound_nodes if id(node) in own_nodes and node.input_tensors]
        entries.append(entry)

    def history(structure):
        if isinstance(structure, SymbolicTensor):
            return _tensor_config(structure, node_positions)["config"]["keras_history"]
        if isinstance(structure, dict):
            return {key: history(value) for key, value in structure.items()}
        return [history(item) for item in structure]

    return {"name": model.name, "trainable": model.trainable, "layers": entries,
            "input_layers": history(model._input_structure),
            "output_layers": history(model._output_structure)}


class _NotYet(Exception):
    """A node reads a layer call that has not been made yet: retried on the next pass."""


def functional_from_config(cls, config, custom_objects=None, safe_mode=True):
    where = f"model config '{config.get('name')}'"
    layer_configs = config.get("layers")
    if not isinstance(layer_configs, list):
        raise ValueError(f"{where}: 'layers' must be a list of layer configs")
    created, pending = {}, []
    for index, layer_data in enumerate(layer_configs):
        layer = deserialize_layer(layer_data, custom_objects, safe_mode,
                                  f"{where}, layer {index}")
        name = layer_data.get("name", layer.name)
        if name in created:
            raise ValueError(f"{where}: two layers are named '{name}'")
        created[name] = layer
        nodes = layer_data.get("inbound_nodes") or []
        if not isinstance(nodes, list):
            raise ValueError(f"{where}: inbound_nodes of layer '{name}' must be a list")
        pending.append((layer, name, list(nodes)))

    def tensor(history):
        if (not isinstance(history, (list, tuple)) or len(history) < 3
                or not isinstance(history[0], str)):
            raise ValueError(f"{where}: a tensor reference must be [layer name, node index, "
                             f"tensor index], got {history!r}")
        layer_name, node_index, tensor_index = history[:3]
        if layer_name not in created:
            raise ValueError(f"{where}: a call reads layer '{layer_name}', which the config "
                             "does not define")
        nodes = created[layer_name]._inbound_nodes
        if not isinstance(node_index, int) or not isinstance(tensor_index, int) or \
                node_index < 0 or tensor_index < 0:
            raise ValueError(f"{where}: invalid tensor reference {history!r}")
        if node_index >= len(nodes):
            raise _NotYet
        outputs = nodes[node_index].outputs
        if tensor_index >= len(outputs):
            raise ValueError(f"{where}: layer '{layer_name}' call {node_index} has "
                             f"{len(outputs)} output(s), the config reads output {tensor_index}")
        return outputs[tensor_index]

    def arguments(structure):
        if isinstance(structure, dict) and structure.get("class_name") == "__keras_tensor__":
            return tensor((structure.get("config") or {}).get("keras_history"))
        if isinstance(structure, list):
            return [arguments(item) for item in structure]
        if isinstance(structure, dict):
            return {key: arguments(value) for key, value in structure.items()}
        return structure

    def call(layer, node):
        if isinstance(node, dict):  # Keras 3: {"args": [...], "kwargs": {...}}
            args, kwargs = arguments(node.get("args") or []), arguments(node.get("kwargs") or {})
        elif isinstance(node, list):  # Keras 2: [[name, node, tensor, kwargs], ...]
            inputs = [tensor(entry) for entry in node]
            kwargs = node[0][3] if node and len(node[0]) > 3 and node[0][3] else {}
            args = [inputs[0] if len(inputs) == 1 else inputs]
        else:
            raise ValueError(f"{where}: invalid node of layer '{layer.name}': {node!r}")
        if not isinstance(kwargs, dict):
            raise ValueError(f"{where}: the kwargs of a call of layer '{layer.name}' must be "
                             f"a dict, got {kwargs!r}")
        # Keras records e.g. mask=None on calls; an unset argument kiln's call lacks is dropped
        kwargs = {key: value for key, value in kwargs.items()
                  if value is not None or layer._call_accepts(key)}
        layer(*args, **kwargs)

    while any(nodes for _, _, nodes in pending):
        progress = False
        for layer, _, nodes in pending:
            while nodes:
                try:
                    call(layer, nodes[0])
                except _NotYet:
                    break
                nodes.pop(0)
                progress = True
        if not progress:
            stuck = sorted(name for _, name, nodes in pending if nodes)
            raise ValueError(f"{where}: the layer calls of {stuck} read calls that never "
                             "happen (a loop or a missing layer call)")

    def structure(value):
        if isinstance(value, list) and len(value) == 3 and isinstance(value[0], str):
            try:
                return tensor(value)
            except _NotYet:
                raise ValueError(f"{where}: {value!r} names a layer call that the config does "
                                 "not make") from None
        if isinstance(value, dict):
            return {key: structure(item) for key, item in value.items()}
        if isinstance(value, list):
            return [structure(item) for item in value]
        raise ValueError(f"{where}: invalid input or output reference {value!r}")

    inputs = structure(config.get("input_layers"))
    outputs = structure(config.get("output_layers"))
    model = cls(inputs=inputs, outputs=outputs, name=config.get("name"))
    if config.get("trainable") is False:
        model.trainable = False
    return model


# -- compile state ----------------------------------------------------------------------------
def compile_config(model):
    """Keras 3's compile_config: the arguments compile() got, serialized."""
    from .. import optimizers

    metrics = model._compile_metrics
    return {"optimizer": optimizers.serialize(model.optimizer),
            "loss": serialize_keras_object(model.loss),
            "loss_weights": serialize_keras_object(model.loss_weights),
            "metrics": serialize_keras_object(metrics.user_metrics),
            "weighted_metrics": serialize_keras_object(metrics.user_weighted),
            "run_eagerly": False, "steps_per_execution": 1, "jit_compile": True}


def compile_from_config(model, config, custom_objects=None):
    """compile() with the arguments of a saved compile_config."""
    from .. import optimizers
    from .serialization import deserialize_loss, deserialize_metric

    def each(value, function):
        if isinstance(value, list):
            return [each(item, function) for item in value]
        if isinstance(value, dict) and "class_name" not in value:
            return {key: each(item, function) for key, item in value.items()}
        return function(value, custom_objects)

    optimizer = config.get("optimizer", "rmsprop")
    if isinstance(optimizer, dict):
        optimizer = optimizers.deserialize(optimizer, custom_objects)
    try:
        model.compile(optimizer=optimizer,
                      loss=each(config.get("loss"), deserialize_loss),
                      loss_weights=config.get("loss_weights"),
                      metrics=each(config.get("metrics"), deserialize_metric),
                      weighted_metrics=each(config.get("weighted_metrics"),
                                            deserialize_metric))
    except (ValueError, TypeError):
        model.compiled = False  # compile() may fail after marking the model compiled
        raise


def has_graph(model):
    """Whether `model` is a Sequential or Functional model (one get_config can describe)."""
    from ..models import Sequential
    from ..models.model import Functional

    return isinstance(model, Sequential) or (isinstance(model, Functional)
                                             and getattr(model, "_layer_nodes", None) is not None)


__all__ = ["compile_config", "compile_from_config", "functional_config",
           "functional_from_config", "has_graph", "sequential_config", "sequential_from_config",
           "serialize_layer", "serialize_model"]
