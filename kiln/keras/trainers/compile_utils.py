"""The loss and metric containers compile() builds, as Keras 3's compile_utils.

CompileLoss maps `loss` / `loss_weights` (one value, a list per output or a dict by output
name) to one step-kernel head per output with a loss; the reported `loss` is the weighted sum
of the per-output losses (plus regularization penalties, later), and a model with several
losses also reports each one, unweighted, as `<output_name>_loss`.

CompileMetrics maps `metrics` / `weighted_metrics` the same way to Metric objects named as the
user wrote them ('acc' stays 'acc'), prefixed by the output name when the model has several
outputs. 'accuracy' / 'acc' become binary, sparse categorical or categorical accuracy by the
output's width and the loss's labels, as Keras decides. Only `weighted_metrics` see sample
weights, as in Keras 3.
"""

import numpy as np

from ...ops.losses.no_loss import MetricsOnlyHead
from ...plan.loss_plan import OutputLoss
from .. import losses as losses_module
from .. import metrics as metrics_module


def output_names(model):
    """The names losses, metrics and dict labels use for each output, in flattened order: the
    keys of a dict of outputs (as Keras), else the layer producing each output."""
    structure = getattr(model, "_output_structure", None)
    if isinstance(structure, dict) and len(structure) == len(model.outputs):
        return sorted(structure)
    names = []
    for tensor in model.outputs:
        history = getattr(tensor, "_keras_history", None)
        names.append(history[0].name if history else tensor.name)
    return names


def per_output(value, names, argument, allow_single=True):
    """`value` (one entry, a list with one per output, or a dict by output name) as a list
    with one entry (or None) per output."""
    count = len(names)
    if isinstance(value, dict):
        unknown = sorted(set(value) - set(names))
        if unknown:
            raise ValueError(f"compile: argument {argument} has keys {unknown} that are not "
                             f"output names; the outputs are {names}")
        return [value.get(name) for name in names]
    if isinstance(value, (list, tuple)) and count > 1:
        if len(value) != count:
            raise ValueError(f"compile: argument {argument} must have one entry per output "
                             f"({count}: {names}), got {len(value)}")
        return list(value)
    if not allow_single:
        raise ValueError(f"compile: argument {argument} must be a list or dict for a model "
                         f"with {count} outputs")
    return [value] * count


class CompileLoss:
    """Args: loss, loss_weights as given to compile()."""

    def __init__(self, loss, loss_weights=None):
        if loss_weights is not None and not isinstance(loss_weights, (list, tuple, dict,
                                                                      int, float)):
            raise ValueError(f"compile: argument loss_weights must be a float (one output) or "
                             f"a list or dict (several outputs), got {loss_weights!r}")
        self.user_loss, self.user_loss_weights = loss, loss_weights
        self.entries = None  # [(output index, Loss, weight, name)] once built
        self.watched = {}  # output index -> MetricsOnlyHead: metrics on an output without loss

    def build(self, model):
        names = output_names(model)
        self.watched = {}
        losses = per_output(self.user_loss, names, "loss")
        weights = ([None] * len(names) if self.user_loss_weights is None else
                   per_output(self.user_loss_weights, names, "loss_weights"))
        self.entries = []
        for index, (loss, weight, name) in enumerate(zip(losses, weights, names, strict=True)):
            loss = losses_module.get(loss)
            if loss is None:
                continue
            if loss.reduction not in ("sum_over_batch_size", "mean"):
                raise ValueError(f"compile: loss '{loss.name}' has reduction "
                                 f"{loss.reduction!r}; kiln trains with 'sum_over_batch_size'")
            head = loss.engine_head()
            if head is None:
                raise ValueError(f"compile: loss {loss.name!r} has no kiln step kernel; kiln "
                                 "trains with the built-in Keras losses and losses written "
                                 "with keras.ops (a Loss subclass needs its call())")
            if hasattr(head, "trace"):  # a user's loss: traced now, so mistakes show here
                head.trace(model.outputs[index])
            self.entries.append((index, loss, 1.0 if weight is None else float(weight), name))
        added = model._added_losses()  # (a compute_loss override is traced now)
        if not self.entries and not added:
            if self.user_loss is None:
                raise ValueError("compile: argument loss is required to train (a loss name, "
                                 "function or keras.losses object), unless the model adds "
                                 "its losses itself (add_loss, compute_loss)")
            raise ValueError("compile: argument loss gives no output a loss")
        if isinstance(self.user_loss, dict) and isinstance(
                getattr(model, "_output_structure", None), dict):
            # Keras walks a loss dict over a dict of outputs in the dict's own order
            order = list(self.user_loss)
            self.entries.sort(key=lambda entry: order.index(entry[3]))
        self.several = len(self.entries) > 1
        self.metric_names = [f"{name}_loss" for _, _, _, name in self.entries] \
            if self.several else []
        return self

    def output_losses(self, compiled=True, metric_outputs=()):
        """OutputLoss per output with a loss (fresh heads: one set per plan), then a
        loss-less one per output only metrics read. `compiled` False (a compute_loss
        override that leaves the compiled loss out): the outputs with a loss that metrics
        read (`metric_outputs`) get loss-less heads instead, for their labels."""
        losses = []
        for index, loss, weight, _ in self.entries:
            head = loss.engine_head()
            if compiled:
                losses.append(OutputLoss(head, weight, index))
            elif index in metric_outputs:
                losses.append(OutputLoss(MetricsOnlyHead(head.name, head.sparse), 0.0, index))
        return losses + [OutputLoss(MetricsOnlyHead(head.name, head.sparse), 0.0, index)
                         for index, head in self.watched.items()]

    def head_for(self, output):
        for index, loss, _, _ in self.entries:
            if index == output:
                return loss.engine_head()
        return self.watched.get(output)

    def watch(self, output, name, sparse):
        """The loss-less head of an output that only metrics read (made once)."""
        if output not in self.watched:
            self.watched[output] = MetricsOnlyHead(name, sparse)
        return self.watched[output]


class CompileMetrics:
    """Args: metrics, weighted_metrics as given to compile()."""

    def __init__(self, metrics=None, weighted_metrics=None):
        for argument, value in (("metrics", metrics), ("weighted_metrics", weighted_metrics)):
            if value is not None and not isinstance(value, (list, tuple, dict)):
                raise ValueError(f"compile: argument {argument} must be a list, tuple or "
                                 f"dict, got {value!r}")
        self.user_metrics, self.user_weighted = metrics, weighted_metrics
        self.entries = []  # [(log name, Metric, output index, weighted)]

    @property
    def metrics(self):
        return [metric for _, metric, _, _ in self.entries]

    @property
    def outputs(self):
        """The outputs the metrics read."""
        return {output for _, _, output, _ in self.entries}

    def build(self, model, compile_loss):
        names = output_names(model)
        self.entries = []
        seen = {}
        for weighted, user in ((False, self.user_metrics), (True, self.user_weighted)):
            if not user:
                continue
            if len(names) == 1:
                groups = [list(user.values()) if isinstance(user, dict) else list(user)]
            else:
                groups = per_output(user, names, "weighted_metrics" if weighted else "metrics",
                                    allow_single=False)
            for output, group in enumerate(groups):
                if group is None:
                    continue
                group = group if isinstance(group, (list, tuple)) else [group]
                for identifier in group:
                    metric = self._resolve(identifier, model, compile_loss, output)
                    name = metric.name
                    if len(names) > 1:
                        name = f"{names[output]}_{name}"
                    if name in seen:  # Keras: a repeated name gets a suffix
                        seen[name] += 1
                        name = (f"weighted_{metric.name}" if weighted and len(names) == 1
                                else f"{name}_{seen[name] - 1}")
                    seen.setdefault(name, 1)
                    self.entries.append((name, metric, output, weighted))
        return self

    @staticmethod
    def _resolve(identifier, model, compile_loss, output):
        head = compile_loss.head_for(output)
        if head is None:  # an output without a loss: its labels reach the metrics alone
            sparse = getattr(metrics_module.get(identifier), "sparse_labels", False) \
                if not isinstance(identifier, str) or identifier.lower() not in (
                    "accuracy", "acc") else False
            head = compile_loss.watch(output, output_names(model)[output], sparse)
        if isinstance(identifier, str) and identifier.lower() in ("accuracy", "acc"):
            width = model.outputs[output].shape[-1]
            if width == 1:
                return metrics_module.BinaryAccuracy(name=identifier)
            if head.sparse:
                return metrics_module.SparseCategoricalAccuracy(name=identifier)
            return metrics_module.CategoricalAccuracy(name=identifier)
        metric = metrics_module.get(identifier)
        if isinstance(identifier, str):
            metric.name = identifier  # logged as written ('mse' stays 'mse')
        return metric

    def planners(self):
        """StepPlan metric callables, one per metric and named after it (the plan records
        whose kernel each call is): each adds its metric's kernel after the heads, or returns
        the after-step update of a metric without one."""
        return [MetricPlanner(metric, output, weighted)
                for _, metric, output, weighted in self.entries]

    def reset_state(self):
        for _, metric, _, _ in self.entries:
            metric.reset_state()

    def results(self):
        return {name: _log_value(metric.result()) for name, metric, _, _ in self.entries}


def _log_value(value):
    """A result as logs hold it: a float for one value (a user's result() may return a 0-d
    array or a keras.Variable)."""
    value = value.numpy() if hasattr(value, "numpy") else value
    return float(value) if np.ndim(value) == 0 else np.asarray(value)


class MetricPlanner:
    """Plans one metric of a StepPlan: `planner(builder, views)` adds the metric's kernel,
    reading its output's head view, and returns its after-step updates."""

    def __init__(self, metric, output, weighted):
        self.name = metric.name
        self.metric, self.output, self.weighted = metric, output, weighted

    def __call__(self, builder, views):
        view = next(view for view in views if view.loss.output == self.output)
        update = self.metric.plan_update(builder, view,
                                         view.metric_weights if self.weighted else view.ones)
        return [] if update is None else [update]
