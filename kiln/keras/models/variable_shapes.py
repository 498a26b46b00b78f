"""Variable input sizes: `keras.Input((None,))` for sequences of any length, `Input((None,
None, 3))` for images of any size, `Input((None, 64, 64, 1))` for clips of any length.

A plan is compiled for fixed shapes (every buffer is allocated once, every primitive is made
for its sizes), so a model with a None axis in an input keeps two kinds of graph:

- the model's own graph, traced at a probe size (input_layer.PROBE_SIZE) on every None axis:
  what `summary()`, `output_shape`, `get_config()` and saving read. The model traces its
  layers once more at SECOND_PROBE_SIZE; an axis of a layer's output whose size differs
  between the two traces follows an input's None axis and is shown as None, as Keras does.
  A layer whose weights would differ between the two traces (a Dense after a Flatten of a
  None axis) is refused there, naming the layer and the axis.
- a concrete graph per input shape the model meets (a generator's batches of 7, 12 and 5
  steps; predict on 16x16 then 24x20 images): the same layer objects called again on inputs
  of that shape (so the same weights, in the same ParameterStore), planned like any fixed
  graph. The model's PlanCache keys those plans by (kind, batch size, input shapes), so its
  bound (KILN_PLAN_CACHE_SIZE) holds for them too; each new shape costs one trace and one
  plan build, and a shape seen again reuses its plan while it is cached.

A model without a None axis never comes here: its plans are keyed and built as before.
"""

import numpy as np

from ...graph.symbolic import SymbolicTensor, tracing
from ...graph.topology import Graph
from ...ops.tensor import logical_dims
from .. import initializers
from ..layers.base_layer import flatten, pack_like
from ..layers.input_layer import PROBE_SIZE, InputLayer
from .functional import replay_mapping, replay_operations

# the second size each None axis is traced at: far from PROBE_SIZE, so that after a few
# stride-2 layers the two traces still differ where the size follows the input
SECOND_PROBE_SIZE = 2 * PROBE_SIZE


def has_variable_axes(tensors):
    return any(t.variable_axes for t in tensors)


class VariableShapes:
    """The concrete graphs of a model whose inputs have None axes (made in _init_graph).

    Args:
        model: the model, its graph traced at the probe sizes.
    """

    def __init__(self, model):
        self.model = model
        self.probe_shapes = tuple(tuple(t.concrete_shape[1:]) for t in model.inputs)
        second = tuple(tuple(SECOND_PROBE_SIZE if axis in t.variable_axes else size
                             for axis, size in enumerate(t.concrete_shape[1:], start=1))
                       for t in model.inputs)
        with kept_layer_records(model):
            inputs, mapping = self._trace(second)
            self._mark_variable_axes(mapping)
            self._check_weights(mapping)
        self._show_variable_axes()

    def plan(self, training, batch_size, evaluate, inputs, loss_call=None):
        """The model's plan for one batch size and the shapes of `inputs` (the batch's input
        arrays; None: the probe shapes), from its PlanCache or built and stored there: a
        shape not met before (or dropped from the cache) costs a trace and a plan build."""
        model = self.model
        model._require_graph()
        model._sync()
        shapes = None if inputs is None else tuple(tuple(x.shape[1:]) for x in inputs)
        key = ("evaluate" if evaluate else training, batch_size, shapes or self.probe_shapes)
        plan = model._plans.get(key)
        if plan is None:
            plan = model._new_plan(self.graph(shapes), training, batch_size, evaluate,
                                   loss_call)
            model._plans[key] = plan
        return plan

    def graph(self, input_shapes=None):
        """The Graph of the model's layers traced on inputs of `input_shapes` (one shape
        without the batch per input; None: the probe shapes)."""
        shapes = self.probe_shapes if input_shapes is None else input_shapes
        with kept_layer_records(self.model):
            try:
                inputs, mapping = self._trace(shapes)
            except ValueError as error:  # a size a layer cannot take (shorter than a kernel)
                shown = shapes[0] if len(shapes) == 1 else list(shapes)
                raise ValueError(f"{self.model.context}: a batch of input shape "
                                 f"{shown} (without the batch axis): {error}") from error
        outputs = [replay_operations(t, mapping) for t in self.model.outputs]
        return Graph(inputs, outputs)

    # -- tracing ----------------------------------------------------------------------------
    def _trace(self, shapes):
        """(the concrete input tensors, {id(model tensor): concrete tensor})."""
        model = self.model
        inputs = [_concrete_input(old, shape)
                  for old, shape in zip(model.inputs, shapes, strict=True)]
        if _replays_its_layers(model):
            return inputs, replay_mapping(model, inputs, model._layer_nodes)
        # a subclassed model: its call() again, on the concrete inputs
        structure = pack_like(model._input_structure, inputs)
        tracing.append(model.context)
        try:
            outputs = flatten(model.call(structure))
        finally:
            tracing.pop()
        mapping = {id(old): new for old, new in zip(model.inputs, inputs, strict=True)}
        mapping.update({id(old): new for old, new in zip(model.outputs, outputs,
                                                            strict=True)})
        return inputs, mapping

    def _mark_variable_axes(self, mapping):
        """Each layer output whose size differs between the two traces is None there."""
        model = self.model
        for node in model._layer_nodes:
            for old in node.outputs:
                new = mapping.get(id(old))
                if new is None or old.variable_axes:
                    continue
                before, after = old.concrete_shape, new.concrete_shape
                if len(before) == len(after):
                    old.variable_axes = frozenset(
                        axis for axis in range(1, len(before)) if before[axis] != after[axis])
        for old in model.outputs:  # outputs of a subclassed model (no layer nodes)
            new = mapping.get(id(old))
            if new is not None and not old.variable_axes:
                old.variable_axes = frozenset(
                    axis for axis in range(1, len(old.concrete_shape))
                    if old.concrete_shape[axis] != new.concrete_shape[axis])

    def _show_variable_axes(self):
        """summary() shows each layer's first output shape: with its None axes now."""
        model = self.model
        for layer in model.layers:  # what summary() shows: the first call's output shape
            nodes = getattr(layer, "_inbound_nodes", ())
            if nodes and any(node is nodes[0] for node in model._layer_nodes):
                outputs = nodes[0].outputs
                layer._first_output_shape = (outputs[0].shape if len(outputs) == 1
                                             else [t.shape for t in outputs])

    def _check_weights(self, mapping):
        """Refuse a layer whose weights depend on a None axis: the layer made anew from its
        config and called on the second trace's inputs must make weights of the same
        shapes (Keras refuses such a layer when it is built on the None axis)."""
        from .model import Model

        for node in self.model._layer_nodes:
            layer = node.layer
            if isinstance(layer, (InputLayer, Model)) or not layer.weights:
                continue
            new_inputs = [mapping.get(id(t)) for t in node.input_tensors]
            if any(t is None for t in new_inputs) or all(
                    old.concrete_shape == new.concrete_shape
                    for old, new in zip(node.input_tensors, new_inputs, strict=True)):
                continue
            shapes = _weight_shapes_at(layer, node, mapping)
            own = [tuple(w.shape) for w in layer.weights]
            if shapes is not None and shapes != own:
                shown = [t.shape for t in node.input_tensors]
                axes = sorted({axis for t in node.input_tensors for axis in t.variable_axes})
                raise ValueError(
                    f"{layer.context}: its weights depend on the size of input axis "
                    f"{axes[0] if len(axes) == 1 else axes}, which is None (any size) in its "
                    f"input shape {shown[0] if len(shown) == 1 else shown}: weights {own} at "
                    f"one size, {shapes} at another; give that axis a fixed size in "
                    "keras.Input, or reduce it first (e.g. GlobalAveragePooling instead of "
                    "Flatten)")


def _concrete_input(old, shape):
    """A model input tensor of the concrete `shape` (without the batch) in `old`'s format."""
    dims = logical_dims((old.dims[0], *shape), old.data_format)
    tensor = SymbolicTensor(dims, old.data_format, old.flattened, name=old.name,
                            dtype=old.dtype)
    tensor._format_fixed = True
    return tensor


def _replays_its_layers(model):
    """Whether the model's layer graph can be called again as it is (a functional or
    Sequential model; keras.ops between its layers are applied again with them)."""
    from .model import Model

    own_call = type(model).call
    return own_call is Model.call or getattr(own_call, "__qualname__", "").startswith(
        "Sequential.")


def _weight_shapes_at(layer, node, mapping):
    """The weight shapes of a fresh copy of `layer` called on the second trace's tensors,
    or None when it cannot be made or called so (then nothing is refused here)."""
    def substitute(structure):
        return pack_like(structure, [mapping.get(id(t), t) if isinstance(t, SymbolicTensor)
                                     else t for t in flatten(structure)])

    # the copy's initializers draw from the seeded generators: put them back afterwards, so
    # the weights of layers made later do not depend on this check
    generator = initializers._generator[0]
    saved = generator.bit_generator.state, np.random.get_state()
    try:
        clone = type(layer).from_config(layer.get_config())
        clone(*substitute(list(node.call_args)), **substitute(dict(node.call_kwargs)))
    except Exception:  # noqa: BLE001 (a layer that cannot be copied is not checked)
        return None
    finally:
        generator.bit_generator.state = saved[0]
        np.random.set_state(saved[1])
    return [tuple(w.shape) for w in clone.weights]


class kept_layer_records:  # noqa: N801 (used as a context manager, like contextlib's)
    """Tracing a concrete graph calls the model's layers again; their call records
    (_inbound_nodes, the first output shape) are put back as they were afterwards, so
    `layer.output`, the saved config and memory do not grow with every shape met."""

    def __init__(self, model):
        self.layers = _reachable_layers(model)

    def __enter__(self):
        self.saved = [(layer, len(layer._inbound_nodes), layer._first_output_shape)
                      for layer in self.layers]
        return self

    def __exit__(self, *exc_info):
        for layer, count, first_shape in self.saved:
            del layer._inbound_nodes[count:]
            layer._first_output_shape = first_shape
        return False


def _reachable_layers(model):
    """Every layer inside `model` (nested models' layers and wrapped layers too) and model."""
    seen, stack = {}, [model]
    while stack:
        layer = stack.pop()
        if id(layer) in seen:
            continue
        seen[id(layer)] = layer
        stack.extend(layer._tracked)
        stack.extend(layer.__dict__.get("_layers") or ())
        stack.extend(layer.__dict__.get("_stack") or ())
    return list(seen.values())
