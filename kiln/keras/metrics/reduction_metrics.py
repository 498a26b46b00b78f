"""Mean (`keras.metrics.Mean`) and MeanMetricWrapper: the weighted mean of per-sample values.

A value of shape (N, ...) is first averaged to one value per sample (weighted element by
element first when the weights have more than one per sample, a per-pixel weight), then
total += sum(w * value), count += sum(w), result = total / count, as Keras does.
"""

import numpy as np

from .metric import Metric


def samplewise(values, sample_weight):
    """(per-sample weighted values, per-sample weights or None) as Keras'
    reduce_to_samplewise_values: values are averaged down to the weights' rank, multiplied by
    them element by element (per pixel for (N, H, W) weights), then both averaged per sample."""
    values = np.asarray(values, dtype=np.float64)
    if values.ndim == 0:
        values = values.reshape(1)
    weights = None
    if sample_weight is not None:
        weights = np.asarray(sample_weight, dtype=np.float64)
        if weights.ndim == values.ndim + 1 and weights.shape[-1] == 1:
            weights = weights[..., 0]
        if values.ndim > weights.ndim:
            values = values.reshape(*values.shape[:max(weights.ndim, 1)], -1).mean(axis=-1)
        weights = np.broadcast_to(weights, values.shape)
        values = values * weights
        if weights.ndim > 1:
            weights = weights.reshape(len(weights), -1).mean(axis=1)
    if values.ndim > 1:
        values = values.reshape(len(values), -1).mean(axis=1)
    return values, weights


class Mean(Metric):
    """The weighted mean of the values given to update_state."""

    def update_state(self, values, sample_weight=None):
        values, weights = samplewise(values, sample_weight)
        self.state[0] += float(np.sum(values))
        self.state[1] += float(len(values) if weights is None else np.sum(weights))

    def result(self):
        total, count = self.state
        return float(total / count) if count else 0.0

    def after_step(self, view, weights):
        raise ValueError(f"metric '{self.name}': keras.metrics.Mean takes values, not "
                         "(y_true, y_pred); use it outside compile() or wrap a function")


class MeanMetricWrapper(Mean):
    """`fn(y_true, y_pred, **kwargs)` per sample, averaged (Keras' MeanMetricWrapper).

    Args: fn, name, dtype, and fn's keyword arguments."""

    def __init__(self, fn, name=None, dtype=None, **kwargs):
        super().__init__(name=name or getattr(fn, "__name__", None), dtype=dtype)
        self._fn = fn
        self._fn_kwargs = kwargs

    def update_state(self, y_true, y_pred, sample_weight=None):
        values = self._fn(y_true, y_pred, **self._fn_kwargs)
        super().update_state(values, sample_weight)

    def after_step(self, view, weights):
        Metric.after_step(self, view, weights)

    def get_config(self):
        return {**super().get_config(), **self._fn_kwargs}
