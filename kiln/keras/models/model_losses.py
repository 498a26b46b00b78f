"""The losses a model adds to its compiled loss: `add_loss` tensors of its layer calls (and
Keras 2's `model.add_loss`), and a subclass's `compute_loss` override.

Both are traced into the plan's graph, never run eagerly per step. The layer calls of the
model's graph each hold the losses added during them (keras/layers/layer_losses.py); the
training and evaluation plans plan the graph with those tensors as extra ends
(`Graph.added_losses`, summed by kiln/plan/added_losses.py). An inference plan leaves them out.

`compute_loss(x, y, y_pred, sample_weight, training)` overridden in a subclass (Keras 3's
backend-agnostic way to change the loss) is traced on the model's symbolic tensors, once per
way the trainer calls it (with or without y and sample weights, training or evaluating, a
`LossCall`): `super().compute_loss(...)` stands for the compiled loss (the heads of the plan)
and the added losses, and whatever the override adds to it with keras.ops (or returns
instead) is planned as an added loss. `y` is one symbolic tensor per output shaped like it,
`sample_weight` one value per sample ((None, 1) standing for Keras's (None,)); the plan gives
those the batch's labels and weights (`Graph.loss_inputs`, kiln/plan/loss_inputs.py). A
`train_step` / `test_step` override is backend-specific in Keras 3 (it uses jax / tf / torch
gradients) and is refused, naming compute_loss instead.
"""

from collections import namedtuple

from ...graph.symbolic import SymbolicTensor, tracing
from ..layers.base_layer import flatten, pack_like
from ..metrics.metric import recording_updates
from .model_metrics import observed_tensors, with_computed_metrics

# How fit / evaluate call compute_loss for a batch: with labels, with how many sample-weight
# arrays (0: none), in training. compile() traces the override as fit will with labels.
LossCall = namedtuple("LossCall", "labels weights training")
COMPILE_CALL = LossCall(True, 0, True)
# What tracing compute_loss for one LossCall found: whether the compiled and layer-added
# losses count, the added-loss tensors, the loss inputs (labels, sample weights) those and
# the metric updates read, the metric updates (metric, args, kwargs) made on symbolic
# tensors, the terms the returned loss adds to the compiled one; and, for a compute_metrics
# override, whether it returns the compiled logs and the {name: tensor} it adds to them.
LossTrace = namedtuple("LossTrace", "uses_compiled losses loss_inputs updates returned "
                                    "compiled_logs metric_values", defaults=(True, None))


class CompiledLossStandIn:
    """What `super().compute_loss(...)` returns while an override is traced: the compiled
    loss and the added losses, which the plan computes itself. Adding keras.ops tensors to it
    collects them as further losses; it supports `+` and `sum()`-style accumulation only.
    A metric may be updated with it (its value after the step: the compiled loss, the
    added losses and its terms)."""

    traced_value = True  # what a metric's update_state records (keras/metrics/metric.py)

    def __init__(self, model, extra=()):
        self.model = model
        self.extra = list(extra)

    def __add__(self, other):
        if isinstance(other, CompiledLossStandIn):
            return self
        if isinstance(other, (int, float)) and other == 0:
            return self
        if not isinstance(other, SymbolicTensor):
            raise TypeError(f"{self.model.context}: compute_loss may add tensors computed "
                            f"with keras.ops to the loss super().compute_loss() returned, "
                            f"got {type(other).__name__}")
        return CompiledLossStandIn(self.model, self.extra + [other])

    __radd__ = __add__

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        raise NotImplementedError(
            f"{self.model.context}: compute_loss used .{name} of the loss "
            "super().compute_loss() returned; kiln plans the compiled loss itself, so an "
            "override may only add keras.ops tensors to it (total = super().compute_loss(...) "
            "+ extra)")


class ModelLosses:
    """Mixed into Model."""

    def _added_losses(self, call=COMPILE_CALL):
        """The added-loss tensors of this model's graph, each once: its layer calls' (in
        the graph's order), its own call()'s, those added to the model itself, then what a
        compute_loss override adds (traced for `call`, a LossCall)."""
        return self._compute_loss_extra(call).losses

    def _loss_call(self, ys, sample_weights, training):
        """The LossCall of a batch of `ys` and `sample_weights` (lists, or None), or None
        for a model without a compute_loss override (its plans do not depend on it)."""
        if not self._overrides_compute_loss() and not self._overrides_compute_metrics():
            return None
        return LossCall(ys is not None, len(sample_weights or ()), bool(training))

    def _overrides_compute_loss(self):
        return type(self).compute_loss is not ModelLosses.compute_loss

    def _check_own_losses(self, tensors):
        """Keras 2's `model.add_loss(tensor)`: the tensor must come from the model's inputs;
        the plans made before it are dropped (the next step plans the loss too)."""
        inputs = {id(t) for t in getattr(self, "inputs", None) or ()}
        for tensor in tensors if inputs else ():
            stack, seen = [tensor], set()
            while stack:
                source = stack.pop()
                if id(source) in inputs or id(source) in seen:
                    continue
                seen.add(id(source))
                if source.node is None:
                    raise ValueError(
                        f"{self.context}: add_loss: the loss '{tensor.name}' depends on "
                        f"'{source.name}' {source.shape}, which is not one of the model's "
                        f"inputs {[t.name for t in self.inputs]}")
                stack.extend(source.node.inputs)
        self._plans = {}

    def _layer_losses(self):
        """What add_loss received: in the layer calls of the graph, in the model's own
        call(), and (Keras 2) on the model itself."""
        return ([t for node in getattr(self, "_layer_nodes", ()) for t in node.losses]
                + self.__dict__.get("_build_losses", []) + self.__dict__.get("_own_losses", []))

    def _uses_compiled_loss(self, call=COMPILE_CALL):
        """Whether the compiled loss is part of the total (False only for a compute_loss
        override that does not call super().compute_loss)."""
        return self._compute_loss_extra(call).uses_compiled

    def _graph_with_losses(self, layer_graph, call=COMPILE_CALL):
        """`layer_graph` with the added losses, for a training or evaluation plan."""
        trace = self._step_trace(call)
        losses, loss_inputs = trace.losses, trace.loss_inputs
        observed = observed_tensors(trace.updates, trace.returned, trace.metric_values)
        if not losses and not observed:
            return layer_graph
        if layer_graph is not self.graph:
            raise NotImplementedError(
                f"{self.context}: add_loss in a model with None axes in its input shapes is "
                "not supported yet (the losses are traced at one shape); give the input a "
                "fixed shape")
        for tensor in losses:
            if getattr(tensor, "dtype", "float32") != "float32":
                raise ValueError(f"{self.context}: the added loss '{tensor.name}' is not a "
                                 "float tensor")
        return layer_graph.with_added_losses(losses, loss_inputs, observed)

    # -- compute_loss / train_step ----------------------------------------------------------
    def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None, training=True):
        """Keras 3's compute_loss. Called by kiln only to trace an override: this base
        version stands for the compiled loss plus the added losses (see the module doc)."""
        if not tracing or not tracing[-1].startswith("compute_loss"):
            raise NotImplementedError(
                f"{self.context}: compute_loss runs inside kiln's compiled step; call fit, "
                "evaluate, train_on_batch or test_on_batch")
        traced = self.__dict__["_traced_call"]
        given = {"y": y, "y_pred": y_pred, "sample_weight": sample_weight}
        for name, value in given.items():
            if not _same(value, traced[name]):
                raise NotImplementedError(
                    f"{self.context}: compute_loss passed super().compute_loss() another "
                    f"{name} than it was called with; kiln plans the compiled loss on the "
                    "batch's labels, sample weights and the model's outputs, so pass "
                    "y, y_pred and sample_weight on unchanged (and compute other terms with "
                    "keras.ops, added to what super().compute_loss() returns)")
        return CompiledLossStandIn(self)

    def _compute_loss_extra(self, call):
        """The LossTrace of `call`: a compute_loss override is traced once per graph and
        LossCall, and kept."""
        if not self._overrides_compute_loss() or call is None or not getattr(
                self, "built", False) or not hasattr(self, "graph"):
            return LossTrace(True, _unique(self._layer_losses()), [], [], [])
        graph, traces = self.__dict__.get("_compute_loss_traces", (None, {}))
        if graph is not self.graph:
            traces = {}
            self.__dict__["_compute_loss_traces"] = (self.graph, traces)
        if call not in traces:
            traces[call] = LossTrace(True, _unique(self._layer_losses()), [], [], [])  # (once)
            traces[call] = trace_compute_loss(self, call)
        return traces[call]

    def _step_trace(self, call):
        """The LossTrace of `call` with a compute_metrics override traced too (at the
        first plan, once compile has resolved the logs it stands for)."""
        trace = self._compute_loss_extra(call)
        if not self._overrides_compute_metrics() or call is None:
            return trace
        graph, traces = self.__dict__.get("_compute_metrics_traces", (None, {}))
        if graph is not self.graph:
            traces = {}
            self.__dict__["_compute_metrics_traces"] = (self.graph, traces)
        if call not in traces:  # (the compute_loss trace is kept per graph and call too)
            traces[call] = with_computed_metrics(self, call, trace)
        return traces[call]

    def _refuse_step_overrides(self):
        """fit / evaluate refuse a train_step / test_step override (Keras 3's
        backend-specific way), naming compute_loss."""
        from .model import Model

        for name in ("train_step", "test_step"):
            method = getattr(type(self), name, None)
            if method is not None and method is not getattr(Model, name, None):
                raise NotImplementedError(
                    f"{self.context}: overriding {name}() is Keras 3's backend-specific way "
                    "(it takes gradients with jax, tensorflow or torch), which kiln cannot "
                    "run: kiln compiles the step itself. Override compute_loss(x, y, y_pred, "
                    "sample_weight, training) with keras.ops instead (call "
                    "super().compute_loss(...) for the compiled loss), or add losses with "
                    "self.add_loss(...) in a layer's call()")


def _unique(tensors):
    unique, seen = [], set()
    for tensor in tensors:
        if id(tensor) not in seen:
            seen.add(id(tensor))
            unique.append(tensor)
    return unique


def _same(value, traced):
    """Whether `value` is the traced tensor (structure) `traced`, element by element."""
    if traced is None or value is None:
        return value is traced
    values, tensors = flatten(value), flatten(traced)
    return len(values) == len(tensors) and all(
        a is b for a, b in zip(values, tensors, strict=True))


def symbolic_call(model, call):
    """The symbolic (x, y, y_pred, sample_weight) compute_loss / compute_metrics are
    traced with for `call`."""
    x = model._input_structure if len(model.inputs) > 1 else model.inputs[0]
    y_pred = (model.outputs[0] if len(model.outputs) == 1
              else pack_like(model._output_structure, model.outputs))
    y, sample_weight = loss_inputs(model, call)
    return x, y, y_pred, sample_weight


def loss_inputs(model, call):
    """The symbolic y and sample_weight compute_loss is traced with for `call` (each None
    when the batch has none): one label tensor per output, shaped like it and arranged like
    the outputs; one (None, 1) weight per sample for each sample-weight array."""
    from ..ops.reductions import loss_value

    y = None
    if call.labels:
        labels = []
        for index, output in enumerate(model.outputs):
            label = SymbolicTensor((None, *output.dims[1:]), output.data_format,
                                   output.flattened, name="y" if len(model.outputs) == 1
                                   else f"y[{index}]")
            label.loss_input = ("y", index)
            labels.append(label)
        y = labels[0] if len(labels) == 1 else pack_like(model._output_structure, labels)
    weight = None
    if call.weights:
        weights = []
        for index in range(call.weights):
            tensor = SymbolicTensor((None, 1), name="sample_weight" if call.weights == 1
                                    else f"sample_weight[{index}]")
            tensor.loss_input = ("sample_weight", index)
            weights.append(loss_value(tensor))
        weight = weights[0] if len(weights) == 1 else weights
    return y, weight


def trace_compute_loss(model, call):
    """(whether the override called super().compute_loss, the added losses: the layers'
    when it did, then the tensors it adds to that or returns instead, the loss inputs
    those read), traced on the model's symbolic inputs and outputs and the labels and sample
    weights of `call`."""
    x, y, y_pred, sample_weight = symbolic_call(model, call)
    model.__dict__["_traced_losses"] = model._layer_losses()
    model.__dict__["_traced_call"] = {"y": y, "y_pred": y_pred, "sample_weight": sample_weight}
    tracing.append(f"compute_loss of {model.context}")
    recording = recording_updates()
    updates = recording.__enter__()
    try:
        total = model.compute_loss(x=x, y=y, y_pred=y_pred, sample_weight=sample_weight,
                                   training=call.training)
    except (TypeError, NotImplementedError) as error:
        if call.labels:
            raise
        raise ValueError(f"{model.context}: compute_loss was called with y=None (the batch "
                         f"has no labels: pass y to fit / evaluate) and failed: {error}"
                         ) from error
    finally:
        recording.__exit__(None, None, None)
        tracing.pop()
        model.__dict__.pop("_traced_losses", None)
        model.__dict__.pop("_traced_call", None)
    returned = []
    if isinstance(total, CompiledLossStandIn):
        uses_compiled, extra = True, total.extra
        returned = extra
    elif isinstance(total, SymbolicTensor):
        uses_compiled, extra = False, [total]  # the whole loss, without super()
    else:
        raise TypeError(f"{model.context}: compute_loss returned {type(total).__name__}; "
                        "return a tensor computed with keras.ops (or "
                        "super().compute_loss(...) plus one)")
    losses = _unique((model._layer_losses() if uses_compiled else []) + extra)
    sources = flatten([y, sample_weight]) if call.labels or call.weights else []
    read = losses + observed_tensors(updates, returned)
    return LossTrace(uses_compiled, losses, [t for t in sources if _reaches(read, t)],
                     updates, returned)


def _reaches(ends, source):
    """Whether any tensor of `ends` is computed from `source`."""
    stack, seen = list(ends), set()
    while stack:
        tensor = stack.pop()
        if tensor is source:
            return True
        if id(tensor) in seen or tensor.node is None:
            continue
        seen.add(id(tensor))
        stack.extend(tensor.node.inputs)
    return False
