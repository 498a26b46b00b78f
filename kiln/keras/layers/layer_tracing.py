"""How kiln traces user-written layers: the pieces of Keras 3's Layer behaviour that only
matter for subclasses and for keras.ops between layers.

- `auto_config`: a subclass without get_config() is described by its constructor arguments.
- `layer_sources`: the layer graph looks through keras.ops results computed between layers.
- `check_one_graph_for_training`: kiln plans one graph for fit and predict, so a call() that
  computes other ops with training=True is refused rather than silently trained as predicted.
- `distinct_outputs`: a call() returning its input as it is (Keras's add_loss examples do)
  gets an identity op, so the layer's output is a tensor of its own.
- `call_inputs`: the inputs of the layers whose call() runs, innermost last, so that
  `keras.random.normal(shape=(batch, dim))` inside call() can take its batch from them.
"""

import inspect

from ...graph.symbolic import SymbolicTensor

# the symbolic input tensors of each layer whose call() runs, innermost last (base_layer)
call_inputs = []


class PlanDecidesTraining:
    """Keras 3.15's functional models pass fit's training=True (predict's False) to every
    layer of their graph, overriding a `training=` given when the layer was called
    (keras/src/models/functional.py, operation_fn): `BatchNormalization()(x, training=False)`
    in a functional model still learns batch statistics in fit. kiln plans the graph for both,
    so such a call follows the plan. That holds for a layer called while a functional model is
    built (outside any call()) and for the layers a functional model replays when it is called
    so (`next_call`, set by the replay); inside a subclassed call() an explicit value stands.
    `current`: whether the innermost call() under way (a model replaying its graph) was such
    a call."""

    def __init__(self):
        self.next_call = False
        self.current = [False]

    def take(self, outside_any_call):
        """Whether the call starting now follows the plan (and clears the replay's request)."""
        requested, self.next_call = self.next_call, False
        return requested or outside_any_call


plan_decides_training = PlanDecidesTraining()


def auto_config(cls, args, kwargs):
    """Keras 3's automatic config of a layer subclass (keras/src/ops/operation.py __new__):
    its constructor arguments with defaults, when all are plain values; None otherwise."""
    from .base_layer import flatten

    try:
        bound = inspect.signature(cls.__init__).bind(None, *args, **kwargs)
    except TypeError:
        return None
    bound.apply_defaults()
    config = {}
    for key, parameter in list(bound.signature.parameters.items())[1:]:
        value = bound.arguments.get(key)
        if parameter.kind == parameter.VAR_KEYWORD:
            config.update(value or {})
        elif parameter.kind == parameter.VAR_POSITIONAL:
            if value:
                return None
        else:
            config[key] = value
    config.pop("name", None)
    if not all(isinstance(v, (str, int, float, bool, type(None))) for v in flatten(
            list(config.values()))):
        return None
    return config


def layer_sources(tensor):
    """The tensors made by layer calls (or keras.Input) that `tensor` comes from: itself, or,
    for a keras.ops result computed between layers, the sources of its op's inputs (the op
    is part of the engine graph; the layer graph looks through it)."""
    if tensor._keras_history is not None or tensor.node is None:
        return [tensor]
    return [source for t in tensor.node.inputs for source in layer_sources(t)]


def distinct_outputs(layer, args, kwargs, outputs):
    """`outputs` with each tensor that is also an argument of the call replaced by an
    identity op's output (keeping its mask): the layer graph records this call as the
    producer of its outputs, which must not be its inputs."""
    from ...graph.symbolic import apply
    from ...ops.identity import IdentityOp
    from .base_layer import flatten, pack_like

    given = {id(t) for t in flatten([args, kwargs]) if isinstance(t, SymbolicTensor)}
    flat = flatten(outputs)
    if not any(id(t) in given for t in flat):
        return outputs
    fresh = []
    for tensor in flat:
        if id(tensor) in given:
            copy = apply(IdentityOp(f"{layer.name}/identity"), tensor)
            copy._keras_mask = tensor._keras_mask
            copy.loss_value = tensor.loss_value
            tensor = copy
        fresh.append(tensor)
    return pack_like(outputs, fresh)


def op_kinds(outputs):
    """The engine ops computing `outputs`, as (op class, activation / function) in a fixed
    walk order back to tensors without a producing op."""
    from .base_layer import flatten

    kinds, seen = [], set()
    stack = [t for t in flatten(outputs) if isinstance(t, SymbolicTensor)]
    while stack:
        tensor = stack.pop()
        node = tensor.node
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        op = node.op
        kinds.append((type(op).__name__, getattr(op, "activation", None),
                      getattr(op, "function", None), getattr(op, "operation", None)))
        stack.extend(node.inputs)
    return kinds


def check_one_graph_for_training(layer, args, kwargs, outputs):
    """kiln plans one graph for fit and predict: a user layer whose call() takes
    `training` (not given) must compute the same ops with training=True, which fit
    would pass in Keras; otherwise refuse rather than train something else."""
    if (type(layer).__module__.startswith("kiln.") or kwargs.get("training") is not None
            or "training" not in inspect.signature(layer.call).parameters):
        return
    from .layer_losses import DiscardLosses

    with DiscardLosses():  # a check: what this second call adds is not the layer's loss
        training = layer.call(*args, **{**kwargs, "training": True})
    if op_kinds(training) != op_kinds(outputs):
        raise NotImplementedError(
            f"{layer.context}: call() computes other operations with training=True than "
            "without; kiln traces one graph for fit and predict, so a call() that branches "
            "on `training` is not supported yet (use a Dropout / GaussianNoise layer "
            "inside it, or call the layer with training= given inside a subclassed model's "
            "call(); in a functional model fit passes training=True over a given value, as "
            "Keras 3 does)")
