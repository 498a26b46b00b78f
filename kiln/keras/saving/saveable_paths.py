"""Where each layer's and the optimizer's variables live in a Keras 3 weights file.

Keras 3 does not key a weights file by layer names (they are generated and differ between two
instances of one architecture) but by the path its saver walks from the model:
`layers/<snake_case class name>[_<n>]` for the layers of a Sequential or Functional model (the
first Conv2D is `layers/conv2d`, the second `layers/conv2d_1`, whatever their names), then the
model's other attributes sorted by name (private ones last): `optimizer`, or `<attribute>` for a
layer a subclassed model or layer holds. A layer reached twice is saved once, under the first
path. This module walks a kiln model the same way (keras/src/saving/saving_lib.py:
`_save_state`, `_walk_saveable`, `_save_container_state`), so both frameworks name the same
layer the same way and each can read the other's files.
"""

import re

from ..layers.base_layer import Layer

# kiln's own bookkeeping attributes: they hold layers (or tensors) that Keras keeps in
# attributes it skips too (its base Layer's `_layers`, a Sequential's InputLayer, ...).
_INTERNAL_ATTRIBUTES = frozenset({
    "_tracked", "_layers", "_layer_nodes", "_inbound_nodes", "_input_tensor", "_stack",
    "_input_layer", "_input_structure", "_output_structure", "inputs", "outputs", "graph",
    "store", "_store", "_weights", "_plans", "history", "loss_head", "_variable_shapes",
})


def to_snake_case(name):
    """Keras's `naming.to_snake_case`: "MaxPooling2D" -> "max_pooling2d"."""
    name = re.sub(r"\W+", "", name)
    name = re.sub("(.)([A-Z][a-z]+)", r"\1_\2", name)
    return re.sub("([a-z])([A-Z])", r"\1_\2", name).lower()


def is_optimizer(value):
    from .. import optimizers  # imported late: optimizers do not depend on saving

    base = getattr(optimizers, "Optimizer", None)
    if base is not None:
        return isinstance(value, base)
    # no common base class exposed: anything with a learning rate that is not a layer
    return not isinstance(value, Layer) and hasattr(value, "learning_rate")


def own_variables(layer):
    """A layer's own weights in Keras's order: trainable ones, then the others, each in
    creation order (a frozen layer's kernel still counts as trainable here, as in Keras)."""
    weights = layer._weights
    return [w for w in weights if w.trainable] + [w for w in weights if not w.trainable]


def object_name(saveable):
    """The `name` attribute Keras writes on an object's `vars` group."""
    name = getattr(saveable, "name", None)
    if isinstance(name, str):
        return name
    return to_snake_case(type(saveable).__name__)


def saveable_paths(model):
    """[(path, object)] for the model, its layers and its optimizer, in Keras's order.

    `path` is "" for the model itself; each object appears once.
    """
    found, visited = [], set()

    def visit(saveable, path):
        if id(saveable) in visited:
            return
        visited.add(id(saveable))
        found.append((path, saveable))
        for attribute, child in _children(saveable):
            child_path = f"{path}/{attribute}" if path else attribute
            if _is_saveable(child):
                visit(child, child_path)
            elif isinstance(child, (list, tuple, dict)):
                visit_container(child, child_path, set())

    def visit_container(container, path, seen_containers):
        if id(container) in seen_containers:
            return
        seen_containers.add(id(container))
        used_names = {}
        items = container.values() if isinstance(container, dict) else container
        for item in items:
            if _is_saveable(item):
                visit(item, f"{path}/{_unique(to_snake_case(type(item).__name__), used_names)}")
            elif isinstance(item, (list, tuple, dict)):
                visit_container(item, f"{path}/{_unique('container', used_names)}",
                                seen_containers)

    visit(model, "")
    return found


def _is_saveable(value):
    return isinstance(value, Layer) or is_optimizer(value)


def _unique(name, used_names):
    if name in used_names:
        used_names[name] += 1
        return f"{name}_{used_names[name]}"
    used_names[name] = 0
    return name


def _children(saveable):
    """(attribute, value) pairs Keras's saver would visit, in its order."""
    if not isinstance(saveable, Layer):
        return []  # an optimizer's variables are its own; it holds no layers
    from ..models import Model, Sequential
    from ..models.model import Functional

    children = []
    if isinstance(saveable, (Sequential, Functional)):
        # Keras visits a Sequential's or Functional's layers first, then its attributes.
        children.append(("layers", saveable.layers))
    attributes = {name: value for name, value in vars(saveable).items()
                  if name not in _INTERNAL_ATTRIBUTES and not name.startswith("__")}
    if isinstance(saveable, Model):
        attributes["layers"] = saveable.layers  # a property in both frameworks
    # Keras sorts attribute names with private ones ("_x") last.
    for name in sorted(attributes, key=lambda n: f"~{n}" if n.startswith("_") else n):
        value = attributes[name]
        if _is_saveable(value) or (isinstance(value, (list, tuple, dict)) and value):
            children.append((name, value))
    return children
