"""A model's own metrics (Keras 3's `Model.metrics`): metric objects held as attributes
(`self.kl_tracker = keras.metrics.Mean(name="kl")`), updated inside a `compute_loss`
override with values computed there, and logged by fit / evaluate beside the compiled loss
and metrics, as keras.io's backend-agnostic examples do.

`metrics` lists what fit and evaluate log and reset at each epoch: by default the compiled
loss and metrics (one stand-in entry, `compile_metrics`) then the model's own metrics in the
order they were assigned. A subclass overriding the property decides: Keras logs exactly the
metrics it lists, so a list without `super().metrics` logs no loss.

The updates a compute_loss override makes are traced with it (keras/metrics/metric.py
records them): the plan keeps the tensors they read (`Graph.observed`) and the trainer runs
each update on their values after every step, once per batch.
"""

import numpy as np

from ...graph.symbolic import SymbolicTensor
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


class ModelMetrics:
    """Mixed into Model."""

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

        return [run(metric, args, kwargs) for metric, args, kwargs in trace.updates]


def observed_tensors(updates, returned=()):
    """The symbolic tensors the traced updates read (the terms of a compiled-loss stand-in
    too) and the terms `returned`, each once."""
    tensors, seen = [], set()
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
