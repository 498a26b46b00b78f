"""The losses a model adds to its compiled loss: `add_loss` tensors of its layer calls (and
Keras 2's `model.add_loss`), and a subclass's `compute_loss` override.

Both are traced into the plan's graph, never run eagerly per step. The layer calls of the
model's graph each hold the losses added during them (keras/layers/layer_losses.py); the
training and evaluation plans plan the graph with those tensors as extra ends
(`Graph.added_losses`, summed by kiln/plan/added_losses.py). An inference plan leaves them out.

`compute_loss(x, y, y_pred, sample_weight, training)` overridden in a subclass (Keras 3's
backend-agnostic way to change the loss) is traced once on the model's symbolic tensors:
`super().compute_loss(...)` stands for the compiled loss (the heads of the plan) and the
added losses, and whatever the override adds to it with keras.ops is planned as an added
loss. A `train_step` / `test_step` override is backend-specific in Keras 3 (it uses
jax / tf / torch gradients) and is refused, naming compute_loss instead.
"""

from ...graph.symbolic import SymbolicTensor, tracing


class CompiledLossStandIn:
    """What `super().compute_loss(...)` returns while an override is traced: the compiled
    loss and the added losses, which the plan computes itself. Adding keras.ops tensors to it
    collects them as further losses; it supports `+` and `sum()`-style accumulation only."""

    def __init__(self, model):
        self.model = model
        self.extra = []

    def __add__(self, other):
        if isinstance(other, CompiledLossStandIn):
            return self
        if isinstance(other, (int, float)) and other == 0:
            return self
        if not isinstance(other, SymbolicTensor):
            raise TypeError(f"{self.model.context}: compute_loss may add tensors computed "
                            f"with keras.ops to the loss super().compute_loss() returned, "
                            f"got {type(other).__name__}")
        self.extra.append(other)
        return self

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

    def _added_losses(self):
        """The added-loss tensors of this model's graph, each once: its layer calls' (in
        the graph's order), its own call()'s, those added to the model itself, then what a
        compute_loss override adds."""
        uses_compiled, extra = self._compute_loss_extra()
        tensors = self._layer_losses() if uses_compiled else []
        unique, seen = [], set()
        for tensor in tensors + extra:
            if id(tensor) not in seen:
                seen.add(id(tensor))
                unique.append(tensor)
        return unique

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

    def _uses_compiled_loss(self):
        """Whether the compiled loss is part of the total (False only for a compute_loss
        override that does not call super().compute_loss)."""
        return self._compute_loss_extra()[0]

    def _graph_with_losses(self, layer_graph):
        """`layer_graph` with the added losses, for a training or evaluation plan."""
        losses = self._added_losses()
        if not losses:
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
        return layer_graph.with_added_losses(losses)

    # -- compute_loss / train_step ----------------------------------------------------------
    def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None, training=True):
        """Keras 3's compute_loss. Called by kiln only to trace an override: this base
        version stands for the compiled loss plus the added losses (see the module doc)."""
        if not tracing or not tracing[-1].startswith("compute_loss"):
            raise NotImplementedError(
                f"{self.context}: compute_loss runs inside kiln's compiled step; call fit, "
                "evaluate, train_on_batch or test_on_batch")
        return CompiledLossStandIn(self)

    def _compute_loss_extra(self):
        """(whether the compiled and added losses count, the tensors a compute_loss
        override adds to them or returns instead): traced once per graph and kept."""
        if type(self).compute_loss is ModelLosses.compute_loss or not getattr(
                self, "built", False) or not hasattr(self, "graph"):
            return True, []
        cached = self.__dict__.get("_compute_loss_trace")
        if cached is not None and cached[0] is self.graph:
            return cached[1]
        self.__dict__["_compute_loss_trace"] = (self.graph, (True, []))  # no recursion
        traced = trace_compute_loss(self)
        self.__dict__["_compute_loss_trace"] = (self.graph, traced)
        return traced

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


def trace_compute_loss(model):
    """(whether the override called super().compute_loss, the tensors it adds to that or
    returns instead), traced on the model's symbolic inputs and outputs (y is None: the
    labels reach the plan's heads only, through super().compute_loss)."""
    from ..layers.base_layer import pack_like

    x = model._input_structure if len(model.inputs) > 1 else model.inputs[0]
    y_pred = (model.outputs[0] if len(model.outputs) == 1
              else pack_like(model._output_structure, model.outputs))
    model.__dict__["_traced_losses"] = model._layer_losses()
    tracing.append(f"compute_loss of {model.context}")
    try:
        total = model.compute_loss(x=x, y=None, y_pred=y_pred, sample_weight=None,
                                   training=True)
    finally:
        tracing.pop()
        model.__dict__.pop("_traced_losses", None)
    if isinstance(total, CompiledLossStandIn):
        return True, total.extra
    if isinstance(total, SymbolicTensor):
        return False, [total]  # the whole loss, computed without super().compute_loss()
    raise TypeError(f"{model.context}: compute_loss returned {type(total).__name__}; return "
                    "a tensor computed with keras.ops (or super().compute_loss(...) plus one)")

