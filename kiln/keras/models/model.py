"""Model (`keras.Model`): a layer whose graph kiln compiles into step plans.

Three ways to make one, as in Keras 3:
    functional:  keras.Model(inputs=x, outputs=y) over tensors from keras.Input and layer calls
    Sequential:  a functional model built from a list of layers (sequential.py)
    subclassed:  class Net(keras.Model) with layers made in __init__ and used in call(); traced
                 once on symbolic inputs the first time its input shape is known
Every model owns one ParameterStore holding its layers' weights; plans are cached per
(training?, batch size) -- and input shapes, when an input has a None axis (variable_shapes.py)
-- and rebuilt when weights come or go or their trainable flags change
(a weight shared with another model only has its value copied back in: the plans stay). The
cache keeps the most recently used plans and its lock serializes building and running them
(kiln/plan/plan_cache.py).
"""

import os

import numpy as np

from ...binding import constants as dnnl
from ...graph.rewrite import fuse
from ...graph.rules import RULES
from ...graph.symbolic import SymbolicTensor, tracing
from ...graph.topology import Graph
from ...plan.parameters import ParameterStore
from ...plan.plan_cache import PlanCache
from ...plan.step_plan import StepPlan, TrainingForwardPlan
from ..layers.base_layer import Layer, flatten, unique_name
from ..layers.dtype_policies import model_policy
from ..layers.input_layer import Input, InputLayer
from ..layers.layer_losses import CollectLosses, refuse_loss_values
from ..trainers import Trainer
from .functional import map_layers, replay
from .model_losses import COMPILE_CALL, ModelLosses
from .model_metrics import ModelMetrics
from .variable_shapes import VariableShapes, has_variable_axes
from .weight_sync import sync_weights


class Model(ModelLosses, ModelMetrics, Trainer, Layer):
    """Args (functional): inputs, outputs (a tensor, list or dict of tensors), name.

    As in Keras 3, `Model(inputs, outputs)` makes a `Functional` (a Model subclass)."""

    def __new__(cls, *args, **kwargs):
        if cls is Model and (args or "inputs" in kwargs or "outputs" in kwargs):
            return super().__new__(Functional)
        # the arguments reach Layer.__new__, which keeps them as a subclass's automatic config
        return super().__new__(cls, *args, **kwargs)

    def __init__(self, *args, inputs=None, outputs=None, name=None, **kwargs):
        if args:
            inputs = args[0]
            outputs = args[1] if len(args) > 1 else outputs
        default = "functional" if type(self) in (Model, Functional) else type(self).__name__
        super().__init__(name=name or unique_name(default), **kwargs)
        self.compiled = False
        self.stop_training = False
        self.history = None
        self._plans = {}
        self._trainable_flags = None
        self._layers = None
        self._variable_shapes = None  # a VariableShapes when an input has a None axis
        # the graph rewrites plans apply (graph/rules.py; tests compare without some)
        self._plan_rules = RULES
        if inputs is not None or outputs is not None:
            if inputs is None or outputs is None:
                raise ValueError(f"{self.context}: give both inputs= and outputs=")
            self._made_from_graph = True  # a subclass given inputs= and outputs= too
            self._init_graph(inputs, outputs)

    # -- the graph ------------------------------------------------------------------------------
    def _init_graph(self, inputs, outputs, layers=None):
        for tensor in flatten([inputs, outputs]):
            if not isinstance(tensor, SymbolicTensor):
                raise TypeError(f"{self.context}: inputs and outputs must be symbolic tensors "
                                f"(from keras.Input and layer calls), got {tensor!r}")
        self._input_structure, self._output_structure = inputs, outputs
        self.inputs, self.outputs = flatten(inputs), flatten(outputs)
        refuse_loss_values(self.context, self.outputs, "output")
        self.graph = Graph(self.inputs, self.outputs)
        self._layer_nodes, ordered = map_layers(self.inputs, self.outputs)
        if self._layers is None:
            self._layers = ordered if layers is None else layers
        self.data_format = self.inputs[0].data_format
        # The policy the layers were made with (or loaded with) decides the compute type
        policy = model_policy(self, self._layers)
        self.compute_dtype = policy.compute_dtype
        for layer in [self, *self._layers]:
            if not isinstance(layer, InputLayer):
                layer.compute_policy = policy.name
        self.store = ParameterStore()
        self._plans = {}
        # None axes in an input: a concrete graph per input shape met (variable_shapes.py)
        self._variable_shapes = (VariableShapes(self) if has_variable_axes(self.inputs)
                                 else None)
        self.built = True
        if self.compiled:
            self._make_loss_head()

    @property
    def layers(self):
        if self._layers is None:  # subclassed and not traced yet: the layers it holds
            return list(self._tracked)
        return list(self._layers)

    def get_layer(self, name=None, index=None):
        """A layer by name or by its index in `layers`, with Keras 3's messages."""
        if name is not None and index is not None:
            raise ValueError("Provide only a layer name or a layer index. Received: "
                             f"index={index}, name={name}.")
        layers = self.layers
        if index is not None:
            if not -len(layers) <= index < len(layers):
                raise ValueError(f"Was asked to retrieve layer at index {index} but model "
                                 f"only has {len(layers)} layers.")
            return layers[index]
        if name is not None:
            for layer in layers:
                if layer.name == name:
                    return layer
            raise ValueError(f"No such layer: {name}. Existing layers are: "
                             f"{[layer.name for layer in layers]}.")
        raise ValueError("Provide either a layer name or layer index at `get_layer`.")

    @property
    def input(self):
        self._require_graph()
        return self.inputs[0] if len(self.inputs) == 1 else self._input_structure

    @property
    def output(self):
        self._require_graph()
        return self.outputs[0] if len(self.outputs) == 1 else self._output_structure

    @property
    def input_shape(self):
        """Keras 3's Functional.input_shape: the input's shape (None batch), a list for
        several inputs. Subclassed models have none, as in Keras."""
        return self._graph_shapes("input_shape", "inputs")

    @property
    def output_shape(self):
        """Keras 3's Functional.output_shape: as input_shape, for the outputs."""
        return self._graph_shapes("output_shape", "outputs")

    def _graph_shapes(self, attribute, tensors):
        """The shapes of `self.<tensors>` ("inputs" or "outputs")."""
        if not self._is_functional():
            raise AttributeError(f"'{type(self).__name__}' object has no attribute "
                                 f"'{attribute}'")
        self._require_graph()
        shapes = [tuple(t.shape) for t in getattr(self, tensors)]
        return shapes[0] if len(shapes) == 1 else shapes

    def _is_functional(self):
        """Whether Keras would give this model input_shape / output_shape: one made from
        inputs and outputs (Sequential overrides this)."""
        return isinstance(self, Functional) or self.__dict__.get("_made_from_graph", False)

    def compute_output_shape(self, input_shape):
        if self._is_functional() and self.built:
            return self.output_shape
        return super().compute_output_shape(input_shape)

    @property
    def ops(self):
        """The engine ops of the plan, after fusion (for tests and diagnostics)."""
        self._require_graph()
        return fuse(self.graph, self._plan_rules, "training").ops

    def _require_graph(self):
        self._build_if_possible()
        if not self.built:
            raise ValueError(f"{self.context}: the model is not built yet; call it on data "
                             "(fit/predict) or build(input_shape) first")

    def build(self, input_shape=None):
        """Trace a subclassed model on symbolic inputs of `input_shape` (batch first)."""
        if self.built:
            return
        if input_shape is None:
            raise ValueError(f"{self.context}: build() needs input_shape for a subclassed "
                             "model, e.g. build((None, 32, 32, 3))")
        shapes = input_shape if isinstance(input_shape, list) else [input_shape]
        inputs = [Input(shape=tuple(shape)[1:]) for shape in shapes]
        structure = inputs if isinstance(input_shape, list) else inputs[0]
        tracing.append(self.context)  # names this model when its call() misuses a tensor
        try:
            with CollectLosses() as added:  # what add_loss receives in the traced call()
                outputs = self.call(structure)
        finally:
            tracing.pop()
        self._build_losses = added
        self._init_graph(structure, outputs, layers=list(self._tracked))

    def _build_from_data(self, x):
        if not self.built:
            arrays = x if isinstance(x, (list, tuple)) else [x]
            shapes = [(None, *getattr(a, "shape", ())[1:]) for a in arrays]
            self.build(shapes if isinstance(x, (list, tuple)) else shapes[0])

    def call(self, inputs, training=None):
        """A functional model called as a layer runs its layers again on the new inputs."""
        if self._layers is None or not hasattr(self, "_layer_nodes"):
            raise NotImplementedError(f"{self.context}: a subclassed model must define call()")
        return replay(self, inputs, self._layer_nodes, training)

    def _input_context(self, position):
        return self._first_reader(self.inputs[position])

    def _output_context(self):
        history = self.outputs[0]._keras_history
        return history[0].context if history else self.context

    def _index_limit(self, tensor):
        """(limit, reader) when a layer reads `tensor` as indices into `limit` rows (an
        Embedding's input_dim, its `index_limit`; the smallest if several do), else None:
        the data adapters check the ids before a step uses them."""
        limits = [(node.layer.index_limit, node.layer.context) for node in self._layer_nodes
                  if getattr(node.layer, "index_limit", None) is not None
                  and any(t is tensor for t in node.input_tensors)]
        return min(limits, key=lambda limit: limit[0]) if limits else None

    def _first_reader(self, tensor):
        for node in self._layer_nodes:
            if any(t is tensor for t in node.input_tensors):
                return node.layer.context
        return self.context

    # -- weights, freezing and plans -------------------------------------------------------------
    @property
    def weights(self):
        self._build_if_possible()
        return self._unique([w for layer in self.layers for w in layer.weights])

    @property
    def trainable_weights(self):
        self._build_if_possible()
        if not self.trainable:
            return []
        return self._unique([w for layer in self.layers for w in layer.trainable_weights])

    def _sync(self):
        """Before planning or running: hold every weight in this model's store, and tell
        each layer whether it is frozen. Returns the trainable flags (part of a plan's key;
        weight_sync.py)."""
        return sync_weights(self, Model)

    @property
    def _plans(self):
        """The model's PlanCache; assigning a dict of plans keeps just those."""
        cache = self.__dict__.get("_plan_cache")
        if cache is None:
            cache = self.__dict__["_plan_cache"] = PlanCache()
        return cache

    @_plans.setter
    def _plans(self, plans):
        self._plans.replace(plans)

    def _plan(self, training, batch_size, evaluate=False, inputs=None, loss_call=None):
        """The plan for one batch size: training, evaluation (losses and metrics after an
        inference forward) or inference. Callers that run it hold `self._plans.lock`.
        `inputs`: the batch's input arrays, whose shapes pick the plan of a model with None
        axes in its inputs (None: the probe shapes); other models ignore them. `loss_call`:
        how a compute_loss override is called for this batch (model_losses.LossCall)."""
        # one thread at a time syncs the weights, looks up and builds (a build may repack
        # the weight arenas that other plans of this model read)
        with self._plans.lock:
            if getattr(self, "_variable_shapes", None) is not None:
                return self._variable_shapes.plan(training, batch_size, evaluate, inputs,
                                                  loss_call)
            return self._cached_plan(training, batch_size, evaluate, loss_call)

    def _cached_plan(self, training, batch_size, evaluate, loss_call=None):
        self._require_graph()
        self._sync()
        key = ("evaluate" if evaluate else training, batch_size)
        if loss_call is not None and (training is True or evaluate):
            key += (loss_call,)
        plan = self._plans.get(key)
        if plan is None:
            plan = self._new_plan(self.graph, training, batch_size, evaluate, loss_call)
            self._plans[key] = plan
        return plan

    def _new_plan(self, layer_graph, training, batch_size, evaluate, loss_call=None):
        """A StepPlan of `layer_graph` (the model's, or a concrete one of a model with None
        axes) for one batch size."""
        data_type = dnnl.bf16 if self.compute_dtype == "bfloat16" else dnnl.f32
        if training == "forward":  # `model(x, training=True)`: training ops, no backward
            return TrainingForwardPlan(fuse(layer_graph, self._plan_rules, "training"),
                                       batch_size, self.store, data_type=data_type)
        kind = "training" if training else "inference"  # evaluation: inference forward
        if training or evaluate:
            call = loss_call or COMPILE_CALL._replace(training=bool(training))
            losses = self._compile_loss.output_losses(self._uses_compiled_loss(call),
                                                      self._compile_metrics.outputs)
            layer_graph = self._graph_with_losses(layer_graph, call)  # add_loss, compute_loss
            graph = fuse(layer_graph, self._plan_rules, kind,
                         heads={loss.output: loss.head for loss in losses})
            plan = StepPlan(graph, batch_size, self.store,
                            optimizer=self.optimizer.make_updater() if training else None,
                            data_type=data_type, losses=losses,
                            metrics=self._compile_metrics.planners())
            plan.metric_updates.extend(  # what a compute_loss override updates metrics with
                self._traced_metric_updates(plan, self._step_trace(call)))
        else:
            graph = fuse(layer_graph, self._plan_rules, kind)
            plan = StepPlan(graph, batch_size, self.store, data_type=data_type)
        return plan

    def get_weights(self):
        return [w.numpy() for w in self.weights]

    def set_weights(self, weights):
        own = self.weights
        if len(weights) != len(own):
            raise ValueError(f"{self.name}.set_weights: expected {len(own)} arrays, got "
                             f"{len(weights)}")
        for weight, value in zip(own, weights, strict=True):
            weight.assign(value)

    def save_weights(self, filepath, overwrite=True, max_shard_size=None):
        """Writes the weights (and optimizer state) to a Keras 3 `.weights.h5` file. Other
        names are refused, as Keras 3 does (it reads Keras 2 `.h5` weights, never writes them)."""
        from ..distribution.data_parallel_loop import is_writer
        from ..saving import weights_file  # saving walks models: imported when used

        if max_shard_size is not None:
            raise ValueError(f"save_weights: argument max_shard_size is not supported yet "
                             f"(Keras 3's sharded .weights.json files), expected None, got "
                             f"{max_shard_size!r}")
        weights_file.check_weights_filepath(filepath)  # on every rank: the same error
        if not is_writer():  # data-parallel: rank 0 writes, the other ranks hold the same
            return
        weights_file.save_weights(self, filepath, overwrite=overwrite)

    def load_weights(self, filepath, skip_mismatch=False, **kwargs):
        """Reads a `.weights.h5` file written by Keras 3 or kiln (layers matched by path), the
        weights of a `.keras` file, or a Keras 2 `.h5` weights or model file (layers in order,
        or by name with `by_name=True`), as Keras 3's load_weights."""
        from ..saving import legacy_weights, weights_file

        if _is_legacy_weights_path(filepath):
            by_name = kwargs.pop("by_name", False)
            if kwargs:
                raise ValueError(f"load_weights: invalid keyword arguments {sorted(kwargs)}; "
                                 "expected skip_mismatch and, for .h5 files, by_name")
            legacy_weights.load_legacy_weights(self, os.fspath(filepath), by_name=by_name,
                                               skip_mismatch=skip_mismatch)
            return
        weights_file.load_weights(self, filepath, skip_mismatch=skip_mismatch, **kwargs)

    def summary(self, print_fn=print):
        self._build_if_possible()
        rows = [(f"{layer.name} ({type(layer).__name__})", str(layer._first_output_shape),
                 layer.count_params()) for layer in self.layers]
        # columns as wide as their longest entry (Keras' defaults at least), one space apart
        name_width = max([30] + [len(name) + 1 for name, _, _ in rows])
        shape_width = max([22] + [len(shape) + 1 for _, shape, _ in rows])
        width = name_width + shape_width + 13
        print_fn(f'Model: "{self.name}"')
        print_fn("_" * width)
        print_fn(f"{'Layer (type)':<{name_width}}{'Output Shape':<{shape_width}}{'Param #':>13}")
        print_fn("=" * width)
        for name, shape, count in rows:
            print_fn(f"{name:<{name_width}}{shape:<{shape_width}}{count:>13,}")
        print_fn("=" * width)
        total = self.count_params()
        trainable = int(sum(np.prod(w.shape) for w in self.trainable_weights))
        print_fn(f"Total params: {total:,}")
        print_fn(f"Trainable params: {trainable:,}")
        print_fn(f"Non-trainable params: {total - trainable:,}")

    # -- whole-model saving (kiln/keras/saving holds the formats) -------------------------------
    def get_config(self):
        """Keras 3's config: a Functional model's layers and calls; a subclassed model's
        constructor arguments (when plain values), trainable and dtype."""
        from ..saving import model_config

        if model_config.has_graph(self):
            return model_config.functional_config(self)
        from ..saving.subclassed_models import subclassed_config

        return subclassed_config(self)

    @classmethod
    def from_config(cls, config, custom_objects=None, safe_mode=True):
        from ..saving import model_config

        if "layers" in config and "input_layers" in config:
            target = Functional if cls is Model else cls
            return model_config.functional_from_config(target, config, custom_objects,
                                                       safe_mode)
        return cls(**config)

    def save(self, filepath, overwrite=True, zipped=None, **kwargs):
        """The whole model (architecture, weights, compile state and optimizer): a Keras 3
        `.keras` file, or a Keras 2 `.h5` file for a name ending in .h5 / .hdf5."""
        from ..distribution.data_parallel_loop import is_writer
        from ..saving import saving_api

        if not is_writer():  # data-parallel: rank 0 writes, the other ranks hold the same
            return
        saving_api.save_model(self, filepath, overwrite=overwrite, zipped=zipped, **kwargs)

    def to_json(self, **kwargs):
        """The architecture as JSON (`keras.models.model_from_json` reads it back)."""
        from ..saving import saving_api

        return saving_api.model_to_json(self, **kwargs)


class Functional(Model):
    """A model defined by its inputs and outputs: what `keras.Model(inputs, outputs)` makes."""


def _is_legacy_weights_path(filepath):
    """A Keras 2 HDF5 weights name: .h5 / .hdf5 but not Keras 3's .weights.h5."""
    name = os.fspath(filepath)
    return name.endswith((".h5", ".hdf5")) and not name.endswith(".weights.h5")
