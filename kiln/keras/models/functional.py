"""The layer graph of a functional model: which layer calls compute the outputs from the
inputs, `model.layers` in Keras' order, and calling a model as a layer.

The engine graph (ops on tensors, kiln/graph) is what gets planned; this is the layer-level
view Keras users see. The order follows Keras 3's `map_graph` (keras/src/ops/function.py):
layer calls sorted by depth from the outputs, deepest (the inputs) first, ties broken by the
order a depth-first walk from the outputs first met each layer.
"""

from collections import defaultdict

from ...graph.symbolic import SymbolicTensor, apply
from ..layers.base_layer import flatten, layer_sources, pack_like
from ..layers.layer_tracing import plan_decides_training


def _walk(inputs, outputs):
    """(layer nodes in post-order from the outputs, layer -> first-met index)."""
    input_ids = {id(t) for t in inputs}
    finished, in_progress, order, first_met = set(), set(), [], {}
    for output in outputs:
        stack = [(source, False) for source in reversed(layer_sources(output))]
        while stack:
            tensor, expanded = stack.pop()
            if tensor._keras_history is None:
                raise ValueError(f"tensor '{tensor.name}' {tensor.shape} was not produced by "
                                 "a Keras layer call or keras.Input")
            layer, index, _ = tensor._keras_history
            node = layer._inbound_nodes[index]
            if id(node) in finished:
                continue
            if expanded:
                in_progress.discard(id(node))
                finished.add(id(node))
                order.append(node)
                continue
            if id(node) in in_progress:
                raise ValueError(f"the layer graph has a cycle through '{tensor.name}'")
            first_met.setdefault(layer, len(first_met))
            in_progress.add(id(node))
            stack.append((tensor, True))
            if id(tensor) not in input_ids:
                for parent in reversed(node.input_tensors):
                    stack.extend((source, False) for source in reversed(layer_sources(parent)))
    return order, first_met


def map_layers(inputs, outputs):
    """(layer nodes in topological order, the layers in Keras' `model.layers` order)."""
    nodes, first_met = _walk(inputs, outputs)
    node_depth, layer_depth = {}, {}
    for node in reversed(nodes):
        depth = max(node_depth.setdefault(id(node), 0), layer_depth.get(node.layer, 0))
        layer_depth[node.layer] = depth
        node_depth[id(node)] = depth
        for parent in node.parent_nodes:
            node_depth[id(parent)] = max(depth + 1, node_depth.get(id(parent), 0))
    for tensor in inputs:
        layer = tensor._keras_history[0]
        if layer not in layer_depth:
            layer_depth[layer] = 0
            first_met[layer] = -1
    by_depth = defaultdict(list)
    for layer, depth in layer_depth.items():
        by_depth[depth].append(layer)
    layers = []
    for depth in sorted(by_depth, reverse=True):
        layers.extend(sorted(by_depth[depth], key=lambda layer: first_met[layer]))
    return nodes, layers


def has_operations(model):
    """Whether keras.ops calls outside any layer produce tensors of `model`'s layer graph."""
    tensors = list(model.outputs) + [t for node in model._layer_nodes
                                     for t in node.input_tensors]
    return any(t._keras_history is None and t.node is not None for t in tensors)


def replay(model, inputs, nodes, training=None):
    """Call the layers of `model`'s graph again on new `inputs` (calling a model as a layer):
    the same layer objects, so the same weights. `training`: the value the model was called
    with, which Keras passes on to every layer that takes one (replay_mapping)."""
    given = flatten(inputs)
    if len(given) != len(model.inputs):
        raise ValueError(f"{model.context}: expected {len(model.inputs)} input(s), got "
                         f"{len(given)}")
    for old, new in zip(model.inputs, given, strict=True):
        # a None axis of the model's input (any size) takes any size, or a None axis
        expected, got = old.concrete_shape, new.concrete_shape
        if len(expected) != len(got) or any(
                axis not in old.variable_axes and (got[axis] != expected[axis]
                                                   or axis in new.variable_axes)
                for axis in range(1, len(got))):
            shown = tuple(None if axis in old.variable_axes else size
                          for axis, size in enumerate(expected))
            raise ValueError(f"{model.context}: input '{old.name}' expects shape "
                             f"{shown}, got {new.shape} from '{new.name}'")
    mapping = replay_mapping(model, given, nodes, training)
    outputs = [replay_operations(t, mapping) for t in model.outputs]
    if len(outputs) == 1 and not isinstance(model._output_structure, dict):
        return outputs[0]  # Keras unpacks a one-output list
    return pack_like(model._output_structure, outputs)


def replay_mapping(model, given, nodes, training=None):
    """{id(tensor of model's graph): its counterpart} after calling the layer `nodes` again on
    the tensors `given` (one per model input). As Keras's functional call, a `training` value
    given to the model replaces the one each layer was called with; the model called while
    a functional model is built (or so replayed itself) leaves it to the plan
    (layer_tracing.PlanDecidesTraining)."""
    follows_plan = plan_decides_training.current[-1]
    mapping = {id(old): new for old, new in zip(model.inputs, given, strict=True)}

    def substitute(structure):
        flat = flatten(structure)
        return pack_like(structure, [replay_operations(t, mapping)
                                     if isinstance(t, SymbolicTensor) else t for t in flat])

    for node in nodes:
        if not node.input_tensors:
            continue  # an InputLayer
        kwargs = substitute(dict(node.call_kwargs))
        if follows_plan:
            plan_decides_training.next_call = True
        elif training is not None and node.layer._call_accepts("training"):
            kwargs["training"] = training
        outputs = node.layer(*substitute(list(node.call_args)), **kwargs)
        for old, new in zip(node.outputs, flatten(outputs), strict=True):
            mapping[id(old)] = new
    return mapping


def replay_operations(tensor, mapping):
    """The counterpart of `tensor` in a replay: the one in `mapping`, or, for the result of
    keras.ops calls made outside any layer (MobileNetV3's `ReLU(6)(x + 3) * (1 / 6)`), the
    same ops applied again to the counterparts of their inputs (added to `mapping`). A
    tensor of neither kind (outside the model's graph) stands for itself."""
    known = mapping.get(id(tensor))
    if known is not None:
        return known
    node = tensor.node
    if tensor._keras_history is not None or node is None:
        return tensor
    inputs = [replay_operations(t, mapping) for t in node.inputs]
    many = getattr(node.op, "arity", 1) is None
    new = apply(node.op, inputs if many else inputs[0], flattened=tensor.flattened)
    new.dtype = tensor.dtype
    mapping[id(tensor)] = new
    return new
