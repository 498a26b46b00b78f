"""Layer: the Keras base class. `build()` creates weights, `call()` emits engine ops on
symbolic tensors, `get_config()` describes the layer for serialization.

Calling a layer on symbolic tensors (`keras.Input(...)` or another layer's output) records a
node: the layer, its inputs and outputs. The engine graph (ops on SymbolicTensors) is what the
plan compiles; these layer nodes are what Keras shows (`model.layers`, calling a model as a
layer, weight sharing when one layer is called twice).
"""

import inspect
import re
from collections import defaultdict

import numpy as np

from ... import ops
from ...graph.symbolic import SymbolicTensor, apply, tracing
from ...ops.activity_regularization import ActivityRegularizationOp
from ...plan.parameters import ParameterStore
from .. import constraints, initializers, regularizers
from .arguments import check_choice, is_integer, pair  # noqa: F401 (shared by the layers)
from .custom_weights import keras_weight
from .dtype_policies import checked_policy_name, dtype_name, policy_config  # noqa: F401
from .eager_calls import eager_call, is_eager_call
from .layer_losses import CollectLosses, LayerLosses, refuse_loss_values
from .layer_masks import deliver_mask, set_output_masks, with_mask_of
from .layer_tracing import (
    auto_config,
    call_inputs,
    check_one_graph_for_training,
    distinct_outputs,
    layer_sources,
    plan_decides_training,
)
from .weight import Weight

_name_counts = defaultdict(int)

# Keras 3 serializes a layer's dtype as its DTypePolicy
FLOAT32_POLICY = policy_config("float32")


def reset_names():
    _name_counts.clear()


def unique_name(class_name):
    base = re.sub(r"(?<!^)(?=[A-Z][a-z])", "_", class_name).lower()
    base = re.sub(r"(\d)d$", r"\1d", base)
    count = _name_counts[base]
    _name_counts[base] += 1
    return base if count == 0 else f"{base}_{count}"


def flatten(structure):
    """The tensors of a nested list / tuple / dict, in order (dicts by sorted key, as Keras)."""
    if isinstance(structure, dict):
        return [t for key in sorted(structure) for t in flatten(structure[key])]
    if isinstance(structure, (list, tuple)):
        return [t for item in structure for t in flatten(item)]
    return [structure]


def pack_like(structure, flat):
    """`flat` (a list) arranged as `structure`."""
    items = iter(flat)

    def rebuild(s):
        if isinstance(s, dict):
            built = {key: rebuild(s[key]) for key in sorted(s)}
            return {key: built[key] for key in s}
        if isinstance(s, (list, tuple)):
            return type(s)(rebuild(item) for item in s)
        return next(items)

    return rebuild(structure)


class LayerNode:
    """One call of a layer: its (structured) arguments and its output tensors."""

    def __init__(self, layer, call_args, call_kwargs, outputs):
        self.layer = layer
        self.call_args, self.call_kwargs = call_args, call_kwargs
        self.input_tensors = [t for t in flatten([call_args, call_kwargs])
                              if isinstance(t, SymbolicTensor)]
        self.outputs = outputs
        self.losses = []  # what add_loss received during this call (layer_losses.py)

    @property
    def parent_nodes(self):
        parents = []
        for tensor in [source for t in self.input_tensors for source in layer_sources(t)]:
            if tensor._keras_history is not None:
                layer, index, _ = tensor._keras_history
                parents.append(layer._inbound_nodes[index])
        return parents


class Layer(LayerLosses):
    """Base layer.

    Args:
        name: unique name (generated from the class name when omitted).
        input_shape: for the first layer of a Sequential model, the shape without the batch.
        trainable: whether fit() updates its weights.
        weights: Keras 2's initial values, the list `get_weights()` returns once built.
        dtype: 'float32' or 'mixed_bfloat16' (or their DTypePolicy); a model runs one policy,
            so all its layers must agree (a layer given none follows the global policy).
    """

    def __new__(cls, *args, **kwargs):
        instance = super().__new__(cls)
        # a subclass without get_config() is described by its constructor arguments, as Keras
        instance.__dict__["_auto_config"] = auto_config(cls, args, kwargs)
        return instance

    def __init__(self, name=None, input_shape=None, trainable=True, dtype=None, **kwargs):
        cls = type(self).__name__
        batch_input_shape = kwargs.pop("batch_input_shape", None)
        input_dim = kwargs.pop("input_dim", None)
        kwargs.pop("autocast", None)  # Keras 3 flag with no effect here: kiln casts in the plan
        activity_regularizer = kwargs.pop("activity_regularizer", None)
        # Keras 2's `weights=[kernel, bias]`: set right after the layer builds its weights
        self._initial_weights = kwargs.pop("weights", None)
        self._tracked = []
        self.name = name or unique_name(cls)
        self.activity_regularizer = regularizers.get(activity_regularizer, self.context,
                                                     "activity_regularizer")
        if kwargs:
            raise TypeError(f"{self.context}: unexpected keyword argument(s) {sorted(kwargs)}")
        # Keras 2's batch_input_shape: its batch size reaches a Sequential's input (stateful)
        self.batch_size_arg = None
        if input_shape is None and batch_input_shape is not None:
            input_shape = tuple(batch_input_shape)[1:]
            self.batch_size_arg = tuple(batch_input_shape)[0]
        if input_shape is None and input_dim is not None:
            input_shape = (input_dim,)
        self.input_shape_arg = tuple(input_shape) if input_shape is not None else None
        self._trainable = bool(trainable)
        # None: the layer follows the policy of the model it is built in
        self._dtype_policy = checked_policy_name(dtype, f"{cls} '{self.name}'")
        self.compute_policy = None  # the policy its model runs, once built in one
        self.built = False
        self._store = None
        self._weights = []
        self._input_tensor = None
        self._inbound_nodes = []
        # the output shape of the first call (Keras 3 layers have no `output_shape`: their
        # `.output.shape`; models have `output_shape`)
        self._first_output_shape = None

    def __setattr__(self, name, value):
        # Layers assigned as attributes, alone or in a list / tuple / dict, belong to this one
        # (subclassed models, nested layers), as Keras tracks them.
        tracked = self.__dict__.get("_tracked")
        if tracked is not None and name != "_tracked":
            items = value.values() if isinstance(value, dict) else (
                value if isinstance(value, (list, tuple)) else [value])
            for item in items:
                if (isinstance(item, Layer) and item is not self
                        and all(item is not t for t in tracked)):
                    tracked.append(item)
        super().__setattr__(name, value)

    @property
    def context(self):
        """How error messages name this layer: "Conv2D 'conv2d_1'"."""
        return f"{type(self).__name__} '{self.name}'"

    # -- trainability -------------------------------------------------------------------------
    @property
    def trainable(self):
        return self._trainable

    @trainable.setter
    def trainable(self, value):
        self._trainable = bool(value)
        for layer in self._tracked:
            layer.trainable = value

    def set_frozen(self, frozen):
        """Called by the model before planning: whether this layer's weights stay fixed (its
        own trainable=False or an enclosing layer's). BatchNormalization also switches to
        inference mode, as in Keras 3."""

    # -- weights ------------------------------------------------------------------------------
    def add_weight(self, *args, **kwargs):
        """Keras 3's `add_weight(shape=None, initializer=None, dtype=None, trainable=True,
        autocast=True, regularizer=None, constraint=None, aggregation="none",
        overwrite_with_gradient=False, name=None)` for custom layers (Keras 2's positional
        order `(name, shape, dtype, initializer, regularizer, trainable, constraint)` too);
        kiln's own layers pass `(name, shape, initializer, dims, tag)` with the logical dims
        and layout tag of the op that reads the weight (see `add_engine_weight`)."""
        if len(args) == 5 and isinstance(args[0], str) and isinstance(args[4], int):
            return self.add_engine_weight(*args, **kwargs)
        return keras_weight(self, args, kwargs)

    def add_variable(self, shape, initializer, dtype=None, trainable=True, autocast=True,
                     regularizer=None, constraint=None, name=None):
        """Keras 3's alias of add_weight, with its own argument order (shape, initializer
        first)."""
        return keras_weight(self, (), {
            "shape": shape, "initializer": initializer, "dtype": dtype,
            "trainable": trainable, "autocast": autocast, "regularizer": regularizer,
            "constraint": constraint, "name": name})

    def add_engine_weight(self, name, shape, initializer, dims, tag, trainable=True,
                          regularizer=None, constraint=None):
        """Create a weight of Keras shape `shape`, stored as logical `dims` with user `tag`;
        `trainable=False` for state the step updates itself. `regularizer` / `constraint`
        (keras.regularizers / keras.constraints objects) are planned into the step."""
        if self._store is None:
            self._store = ParameterStore()
        path = f"{self.weight_prefix}/{name}"
        value = initializers.initial_values(initializer, tuple(shape))
        value = np.asarray(value, dtype=np.float32)
        if value.shape != tuple(shape):
            raise ValueError(f"{self.context}: initializer of '{name}' returned shape "
                             f"{value.shape}, expected {tuple(shape)}")
        self._store.add(path, dims, tag, value, trainable)
        parameter = self._store.parameters[path]
        if regularizer is not None:
            parameter.l1, parameter.l2 = regularizer.coefficients()
            parameter.penalty = regularizer.penalty_trace(shape)
        if constraint is not None:
            parameter.constraint = constraint.spec()
        weight = Weight(self._store, path, shape, trainable)
        weight.regularizer, weight.constraint = regularizer, constraint
        self._weights.append(weight)
        return weight

    @property
    def weight_prefix(self):
        """What the paths of this layer's weights start with: its name (a recurrent layer's
        cell: "<layer>/<cell>", as Keras's paths)."""
        return self.name

    def add_kernel_and_bias(self, kernel_shape, parameter_dims):
        """The kernel (and bias, with use_bias) of a conv or dense layer, in Keras shapes;
        `parameter_dims` is the op's {name: (logical dims, user tag)}."""
        self.kernel = self.add_weight("kernel", kernel_shape, self.kernel_initializer,
                                      *parameter_dims["kernel"],
                                      regularizer=self.kernel_regularizer,
                                      constraint=self.kernel_constraint)
        if self.use_bias:
            self.bias = self.add_weight("bias", (kernel_shape[-1],), self.bias_initializer,
                                        *parameter_dims["bias"],
                                        regularizer=self.bias_regularizer,
                                        constraint=self.bias_constraint)

    def set_weight_regularization(self, kernel_regularizer=None, bias_regularizer=None,
                                  kernel_constraint=None, bias_constraint=None):
        """The Keras arguments of a conv or dense layer's kernel and bias penalties and
        constraints (checked here, planned into the step when the weights are made)."""
        self.kernel_regularizer = regularizers.get(kernel_regularizer, self.context,
                                                   "kernel_regularizer")
        self.bias_regularizer = regularizers.get(bias_regularizer, self.context,
                                                 "bias_regularizer")
        self.kernel_constraint = constraints.get(kernel_constraint, self.context,
                                                 "kernel_constraint")
        self.bias_constraint = constraints.get(bias_constraint, self.context,
                                               "bias_constraint")

    def weight_regularization_config(self):
        """The kernel / bias initializers, regularizers and constraints, in Keras 3's keys."""
        config = {"kernel_initializer": initializers.serialize(self.kernel_initializer),
                  "bias_initializer": initializers.serialize(self.bias_initializer)}
        config.update({key: None if value is None else serialize(value)
                       for key, value, serialize in (
            ("kernel_regularizer", self.kernel_regularizer, regularizers.serialize),
            ("bias_regularizer", self.bias_regularizer, regularizers.serialize),
            ("kernel_constraint", self.kernel_constraint, constraints.serialize),
            ("bias_constraint", self.bias_constraint, constraints.serialize))})
        return config

    def apply_with_activation(self, op, inputs):
        """Run `op` (which fuses relu/tanh/sigmoid), then any activation it could not fuse, or
        the user's activation function (activations.resolve)."""
        output = apply(op, inputs)
        if self.activation not in ops.FUSABLE and self.activation != "linear":
            output = apply(ops.ActivationOp(f"{self.name}/{self.activation}", self.activation),
                           output)
        if getattr(self, "activation_function", None) is not None:  # a user's function
            output = self.activation_function(output)
        return output

    def activation_config(self):
        """The `activation` entry of get_config (see activations.config_of)."""
        from .. import activations

        return activations.config_of(self.activation, getattr(self, "activation_function", None))

    def _unique(self, weights):
        seen, result = set(), []
        for weight in weights:
            if id(weight) not in seen:
                seen.add(id(weight))
                result.append(weight)
        return result

    @property
    def weights(self):
        """Own weights (trainable ones first, as Keras orders them), then nested layers'."""
        own = ([w for w in self._weights if w.trainable]
               + [w for w in self._weights if not w.trainable])
        return self._unique(own + [w for layer in self._tracked for w in layer.weights])

    @property
    def trainable_weights(self):
        if not self.trainable:
            return []
        return self._unique([w for w in self._weights if w.trainable]
                            + [w for layer in self._tracked for w in layer.trainable_weights])

    @property
    def non_trainable_weights(self):
        trainable = {id(w) for w in self.trainable_weights}
        return [w for w in self.weights if id(w) not in trainable]

    variables = weights
    trainable_variables = trainable_weights
    non_trainable_variables = non_trainable_weights

    def get_weights(self):
        return [w.numpy() for w in self.weights]

    def set_weights(self, weights):
        own = self.weights
        if len(weights) != len(own):
            raise ValueError(f"{self.context}: expected {len(own)} weight arrays "
                             f"{[w.shape for w in own]}, got {len(weights)}")
        for weight, value in zip(own, weights, strict=True):
            weight.assign(value)

    def count_params(self):
        return int(sum(np.prod(w.shape) for w in self.weights))

    # -- tracing ------------------------------------------------------------------------------
    def build(self, input_shape):
        self.built = True

    def call(self, inputs):
        raise NotImplementedError(f"{self.context}: a layer must implement call()")

    def __call__(self, *args, **kwargs):
        if is_eager_call(args, kwargs):  # on arrays: through a cached plan (eager_calls.py)
            return eager_call(self, args, kwargs)
        tensors = [t for t in flatten([args, kwargs]) if t is not None]
        if not args or not all(isinstance(t, (SymbolicTensor, bool, int, float, str))
                               for t in tensors):
            raise TypeError(f"{self.context}: layers are called on symbolic tensors "
                            "(keras.Input(...) or another layer's output) while a model is "
                            "built; use model.predict() for numpy arrays")
        refuse_loss_values(self.context, tensors)
        inputs = args[0]
        follows_plan = plan_decides_training.take(outside_any_call=not tracing)
        data_format = getattr(self, "data_format", None)
        for tensor in flatten(inputs):
            if data_format is not None and isinstance(tensor, SymbolicTensor):
                tensor.read_as(data_format, self.context)
        tracing.append(self.context)  # names this layer when call() misuses a tensor
        depth = len(call_inputs)
        call_inputs.append(None)  # build() runs eagerly (keras.random there draws now)
        collector = CollectLosses()
        added = collector.__enter__()  # the losses add_loss receives during this call
        try:
            if not self.built:
                first = flatten(inputs)[0]
                self._input_tensor = first
                shapes = pack_like(inputs, [t.shape for t in flatten(inputs)])
                self.build(shapes)
                self.built = True
                if self._initial_weights is not None:
                    self.set_weights(list(self._initial_weights))
                    self._initial_weights = None
            if "training" in kwargs and not self._call_accepts("training"):
                kwargs.pop("training")
            # the mask a call() receives is not recorded with the call: a replay of the
            # layers (a model called as a layer, a loaded model) computes it again
            call_kwargs = dict(kwargs)
            if follows_plan:  # as Keras's functional models: fit / predict decide
                call_kwargs.pop("training", None)
            call_inputs[-1] = [t for t in flatten(inputs) if isinstance(t, SymbolicTensor)]
            previous_mask = deliver_mask(self, args, call_kwargs)
            plan_decides_training.current.append(follows_plan)
            try:
                outputs = self.call(*args, **call_kwargs)
            finally:
                plan_decides_training.current.pop()
            check_one_graph_for_training(self, args, call_kwargs, outputs)
            outputs = distinct_outputs(self, args, kwargs, outputs)
            set_output_masks(self, inputs, outputs, previous_mask)
        finally:
            tracing.pop()
            del call_inputs[depth:]
            collector.__exit__()
        if self.activity_regularizer is not None:
            l1, l2 = self.activity_regularizer.coefficients()
            penalty = ActivityRegularizationOp(f"{self.name}/activity_regularizer", l1, l2)
            outputs = pack_like(outputs, [with_mask_of(t, apply(penalty, t))
                                          for t in flatten(outputs)])
        self._record(args, kwargs, outputs)
        self._inbound_nodes[-1].losses = added
        flat = flatten(outputs)
        if self._first_output_shape is None:
            self._first_output_shape = (flat[0].shape if len(flat) == 1
                                        else [t.shape for t in flat])
        return outputs

    # -- masks (docs/architecture.md, "Masks") ----------------------------------------------
    supports_masking = False  # whether the output carries compute_mask()'s mask on

    def compute_mask(self, inputs, previous_mask):
        """The mask of this layer's output (a (batch, steps) SymbolicTensor or None): by
        default the input's, for a layer that supports masking (Keras's default)."""
        return previous_mask

    def _call_accepts(self, argument):
        parameters = inspect.signature(self.call).parameters
        return argument in parameters or any(p.kind == p.VAR_KEYWORD
                                             for p in parameters.values())

    def _record(self, args, kwargs, outputs):
        node_index = len(self._inbound_nodes)
        flat = flatten(outputs)
        self._inbound_nodes.append(LayerNode(self, args, kwargs, flat))
        for index, tensor in enumerate(flat):
            tensor._keras_history = (self, node_index, index)

    @property
    def input(self):
        node = self._inbound_nodes[0] if self._inbound_nodes else None
        if node is None:
            raise AttributeError(f"{self.context} has not been called yet: no input")
        if not node.call_args:  # an InputLayer: where the inputs start, as Keras says
            raise AttributeError(f"{self.context} is not connected to an input: it is one")
        return pack_like(node.call_args[0], flatten(node.call_args[0]))

    @property
    def output(self):
        if not self._inbound_nodes:
            raise AttributeError(f"{self.context} has not been called yet: no output")
        outputs = self._inbound_nodes[0].outputs
        return outputs[0] if len(outputs) == 1 else list(outputs)

    def compute_output_shape(self, input_shape):
        return self._first_output_shape

    # -- serialization ------------------------------------------------------------------------
    @property
    def policy_name(self):
        """The dtype policy the layer computes in: its model's once built, else the one it was
        given, else the global policy (as Keras 3 writes it in the config)."""
        from .. import mixed_precision

        return (self.compute_policy or self._dtype_policy
                or mixed_precision.global_policy().name)

    def get_config(self):
        """Keras 3's config: name, trainable, dtype (its policy), activity_regularizer when set;
        the input shape is not part of it (a Sequential config starts with its InputLayer)."""
        config = {"name": self.name, "trainable": self.trainable,
                  "dtype": policy_config(self.policy_name)}
        if self.activity_regularizer is not None:
            config["activity_regularizer"] = regularizers.serialize(self.activity_regularizer)
        auto = self.__dict__.get("_auto_config")
        if type(self).get_config is Layer.get_config and auto is not None:
            config = {**auto, **config}
        return config

    @classmethod
    def from_config(cls, config):
        return cls(**config)

    def __repr__(self):
        return f"<{type(self).__name__} name={self.name}>"
