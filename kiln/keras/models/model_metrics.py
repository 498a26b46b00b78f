"""A model's own metrics (Keras 3's `Model.metrics`): metric objects held as attributes
(`self.kl_tracker = keras.metrics.Mean(name="kl")`), updated inside a `compute_loss`
override with values computed there, and logged by fit / evaluate beside the compiled loss
and metrics, as keras.io's backend-agnostic examples do.

`metrics` lists what fit and evaluate log and reset at each epoch: by default the compiled
loss and metrics (one stand-in entry, `compile_metrics`) then the model's own metrics in the
order they were assigned. A subclass overriding the property decides: Keras logs exactly the
metrics it lists, so a list without `super().metrics` logs no loss.

A `compute_metrics(x, y, y_pred, sample_weight)` override is traced like compute_loss:
`super().compute_metrics(...)` stands for the logs fit would report (each entry a stand-in
the trainer fills in) and the keras.ops tensors the override adds to the dict are computed in
the step; the logs are that dict with each tensor's value of the last batch, as Keras logs
what the last step returned.

The updates a compute_loss override makes are traced with it (keras/metrics/metric.py
records them): the plan keeps the tensors they read (`Graph.observed`) and the trainer runs
each update on their values after every step, once per batch.
"""

import numpy as np

from ...graph.symbolic import SymbolicTensor, tracing
from ..layers.base_layer import flatten
from ..metrics.metric import Metric


class CompiledMetrics:
    """The stand-in `Model.metrics` lists for the compiled loss and metrics (Keras lists its
    loss tracker and CompileMetrics objects); the trainer resets and reports those."""

    name = "compile_metrics"

    def reset_state(self):
        """(fit and evaluate reset the compiled loss and metrics themselves)"""

    def result(self):
        return {}


COMPILED = CompiledMetrics()


class CompiledLog:
    """What `super().compute_metrics(...)` gives as the value of one log while an override
    is traced: the trainer puts that log's value in its place."""

    def __init__(self, name):
        self.name = name


class ModelMetrics:
    """Mixed into Model."""

    def compute_metrics(self, x, y, y_pred, sample_weight=None):
        """Keras 3's compute_metrics. Called by kiln only to trace an override: this base
        version stands for the logs fit and evaluate report (see the module doc)."""
        if not tracing or not tracing[-1].startswith("compute_metrics"):
            raise NotImplementedError(
                f"{self.context}: compute_metrics runs inside kiln's compiled step; call "
                "fit, evaluate, train_on_batch or test_on_batch")
        return {name: CompiledLog(name) for name in self.metrics_names}

    @staticmethod
    def _computed_logs(plan, logs):
        """The logs of `plan` (the last batch's) when the model overrides compute_metrics:
        what the override returned, its stand-ins replaced by `logs` (the usual logs);
        else `logs`."""
        values = getattr(plan, "metric_values", None)
        if values is None:
            return logs
        return {name: logs.get(value.name, 0.0) if isinstance(value, CompiledLog) else value
                for name, value in values.items()}

    def _overrides_compute_metrics(self):
        return type(self).compute_metrics is not ModelMetrics.compute_metrics

    @property
    def metrics(self):
        """The compiled loss and metrics (one entry) and this model's own Metric
        attributes (a Metric, or a list / tuple / dict of them), as Keras 3 lists them."""
        own = []
        for value in list(vars(self).values()):
            items = value.values() if isinstance(value, dict) else (
                value if isinstance(value, (list, tuple)) else [value])
            own.extend(item for item in items if isinstance(item, Metric)
                       and all(item is not seen for seen in own))
        return ([COMPILED] if getattr(self, "compiled", False) else []) + own

    def _logged_metrics(self):
        """(whether the compiled loss and metrics are logged, the own metrics logged)."""
        listed = list(self.metrics)
        return (any(metric is COMPILED for metric in listed),
                [metric for metric in listed if isinstance(metric, Metric)])

    def _traced_metric_updates(self, plan, trace):
        """After-step callables running each update (metric, args, kwargs) of `trace` (a
        LossTrace) on the values `plan` kept of its symbolic arguments. The loss
        super().compute_loss returned (plus terms) is the plan's total loss, less the terms
        the override returned, plus its own."""
        observed = plan.observed

        def value(argument):
            if getattr(type(argument), "traced_value", False):  # the compiled loss, + terms
                return np.float32(plan.stats[0] - sum(value(t).sum() for t in trace.returned)
                                  + sum(value(t).sum() for t in argument.extra))
            array = observed.get(id(argument)) if isinstance(argument, SymbolicTensor) else None
            if array is None:
                return argument
            if not getattr(argument, "loss_value", False):
                return array
            # one value per sample ((N, 1) stands for Keras's (N,)), or one for the batch
            return array.reshape(len(array)) if argument.dims[0] is None else array.reshape(())

        def run(metric, args, kwargs):
            return lambda: metric.update_state(*[value(a) for a in args],
                                               **{k: value(v) for k, v in kwargs.items()})

        runs = [run(metric, args, kwargs) for metric, args, kwargs in trace.updates]
        plan.metric_values = None
        if trace.metric_values is not None:  # a compute_metrics override's logs
            plan.metric_values = {}

            def computed():
                plan.metric_values = {
                    name: _log_value(value(tensor)) if isinstance(tensor, SymbolicTensor)
                    else tensor for name, tensor in trace.metric_values.items()}

            runs.append(computed)
        return runs


def _log_value(value):
    value = np.asarray(value)
    return float(value.reshape(-1)[0]) if value.size == 1 else value


def with_computed_metrics(model, call, trace):
    """`trace` (a LossTrace) with the compute_metrics override traced for `call`: the
    tensors it logs, and the labels and sample weights they read."""
    from .model_losses import _reaches, symbolic_call

    x, y, y_pred, sample_weight = symbolic_call(model, call)
    tracing.append(f"compute_metrics of {model.context}")
    try:
        logs = model.compute_metrics(x, y, y_pred, sample_weight)
    finally:
        tracing.pop()
    if not isinstance(logs, dict):
        raise TypeError(f"{model.context}: compute_metrics returned {type(logs).__name__}; "
                        "return a dict of logs (super().compute_metrics(...) with entries "
                        "added, each a keras.ops tensor or a number)")
    for name, value in logs.items():
        if not isinstance(value, (SymbolicTensor, CompiledLog, int, float)):
            raise TypeError(f"{model.context}: compute_metrics returned {value!r} for "
                            f"'{name}'; a log is a keras.ops tensor of y, y_pred, x or "
                            "sample_weight, or a number")
    compiled = [name for name, _, _, _ in model._compile_metrics.entries]
    if compiled and not any(isinstance(value, CompiledLog) for value in logs.values()):
        raise ValueError(f"{model.context}: compute_metrics does not return the logs of "
                         "super().compute_metrics(...), so the compiled metrics "
                         f"{compiled} are never updated (Keras 3 fails on them too); call "
                         "super().compute_metrics(x, y, y_pred, sample_weight) or compile "
                         "without metrics")
    tensors = [value for value in logs.values() if isinstance(value, SymbolicTensor)]
    sources = flatten([y, sample_weight]) if call.labels or call.weights else []
    read = [t for t in sources if _reaches(tensors, t)]
    return trace._replace(loss_inputs=trace.loss_inputs + read, metric_values=dict(logs))


def observed_tensors(updates, returned=(), metric_values=None):
    """The symbolic tensors the traced updates read (the terms of a compiled-loss stand-in
    too), the terms `returned` and the tensors a compute_metrics override logs, each
    once."""
    tensors, seen = [], set()
    for value in (metric_values or {}).values():
        if isinstance(value, SymbolicTensor) and id(value) not in seen:
            seen.add(id(value))
            tensors.append(value)
    for _, args, kwargs in updates:
        for value in (*args, *kwargs.values()):
            for tensor in (value.extra if getattr(type(value), "traced_value", False)
                           else [value]):
                if isinstance(tensor, SymbolicTensor) and id(tensor) not in seen:
                    seen.add(id(tensor))
                    tensors.append(tensor)
    if any(getattr(type(value), "traced_value", False)
           for _, args, kwargs in updates for value in (*args, *kwargs.values())):
        tensors.extend(t for t in returned if id(t) not in seen and not seen.add(id(t)))
    return tensors
