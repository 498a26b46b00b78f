"""Precision, Recall and AUC (Keras 3): confusion counts at thresholds, accumulated in the
step by one kernel (true / false positives / negatives per threshold, a prediction being
positive when it is above the threshold, weighted by the sample weight).

AUC uses Keras' default: 200 thresholds evenly spread in (0, 1) plus -eps and 1 + eps, the
ROC curve by default (or PR), and the 'interpolation' sum (Keras' exact integral of the
interpolated precision for PR).
"""

import numpy as np

from ...ops.losses import metric_kernels as kernels
from .. import backend
from .metric import Metric

TP, FP, TN, FN = 0, 1, 2, 3


def _divide(a, b):
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(b > 0, a / np.where(b > 0, b, 1), 0.0)


class _ConfusionMetric(Metric):
    """Args: thresholds (the positive-prediction cut-offs), name, dtype, from_logits."""

    def __init__(self, thresholds, name=None, dtype=None, from_logits=False):
        super().__init__(name=name, dtype=dtype)
        self.thresholds = np.asarray(thresholds, dtype=np.float32)
        self.state = np.zeros((4, len(self.thresholds)), dtype=np.float64)
        self.from_logits = from_logits

    def update_state(self, y_true, y_pred, sample_weight=None):
        y_pred = np.asarray(y_pred, dtype=np.float32)
        y_pred = y_pred.reshape(len(y_pred), -1)
        y_true = np.asarray(y_true, dtype=np.float32).reshape(y_pred.shape)
        weights = (np.ones(len(y_pred), np.float32) if sample_weight is None
                   else np.asarray(sample_weight, np.float32).reshape(len(y_pred)))
        kernel = kernels.sigmoid_confusion_kernel if self.from_logits else kernels.confusion_kernel
        kernel(np.ascontiguousarray(y_pred), np.ascontiguousarray(y_true), weights,
               self.thresholds, self.state)

    def plan_update(self, builder, view, weights):
        if view.loss.head.sparse:
            raise ValueError(f"metric '{self.name}': the output's labels are class ids "
                             "(a sparse loss); it needs one 0/1 label per output value")
        kernel = kernels.sigmoid_confusion_kernel if self.from_logits else kernels.confusion_kernel
        builder.add_forward(builder.kernel(
            kernel, (view.outputs, view.label_rows, weights, self.thresholds, self.state),
            f"{self.name} metric"))
        return None


class Precision(_ConfusionMetric):
    """Args: thresholds (default 0.5), name, dtype."""

    def __init__(self, thresholds=None, top_k=None, class_id=None, name=None, dtype=None):
        if top_k is not None or class_id is not None:
            raise ValueError(f"{type(self).__name__}: arguments top_k and class_id are not "
                             "supported by kiln yet (must be None)")
        self._single = thresholds is None or np.ndim(thresholds) == 0
        super().__init__([0.5] if thresholds is None else np.atleast_1d(thresholds), name,
                         dtype)

    def _value(self):
        return _divide(self.state[TP], self.state[TP] + self.state[FP])

    def result(self):
        value = self._value()
        return float(value[0]) if self._single else [float(v) for v in value]


class Recall(Precision):
    def _value(self):
        return _divide(self.state[TP], self.state[TP] + self.state[FN])


class AUC(_ConfusionMetric):
    """Args: num_thresholds, curve ('ROC' or 'PR'), summation_method ('interpolation',
    'minoring' or 'majoring'), name, dtype, from_logits."""

    def __init__(self, num_thresholds=200, curve="ROC", summation_method="interpolation",
                 name=None, dtype=None, thresholds=None, multi_label=False, num_labels=None,
                 label_weights=None, from_logits=False):
        if multi_label or label_weights is not None or thresholds is not None:
            raise ValueError("AUC: arguments multi_label, label_weights and thresholds are not "
                             "supported by kiln yet")
        if curve not in ("ROC", "PR") or summation_method not in (
                "interpolation", "minoring", "majoring"):
            raise ValueError(f"AUC: curve must be 'ROC' or 'PR' and summation_method one of "
                             f"'interpolation', 'minoring', 'majoring', got {curve!r}, "
                             f"{summation_method!r}")
        eps = backend.epsilon()
        inner = [(i + 1) * 1.0 / (num_thresholds - 1) for i in range(num_thresholds - 2)]
        super().__init__([0.0 - eps] + inner + [1.0 + eps], name, dtype, from_logits)
        self.num_thresholds = num_thresholds
        self.curve, self.summation_method = curve, summation_method

    def result(self):
        tp, fp, tn, fn = self.state
        if self.curve == "PR" and self.summation_method == "interpolation":
            return self._interpolated_pr_auc(tp, fp, fn)
        recall = _divide(tp, tp + fn)
        if self.curve == "ROC":
            x, y = _divide(fp, fp + tn), recall
        else:
            x, y = recall, _divide(tp, tp + fp)
        if self.summation_method == "interpolation":
            heights = (y[:-1] + y[1:]) / 2.0
        elif self.summation_method == "minoring":
            heights = np.minimum(y[:-1], y[1:])
        else:
            heights = np.maximum(y[:-1], y[1:])
        return float(np.sum((x[:-1] - x[1:]) * heights))

    @staticmethod
    def _interpolated_pr_auc(tp, fp, fn):
        """Keras' interpolate_pr_auc (Davis & Goadrich): precision interpolated linearly in
        the true positives between thresholds, integrated exactly."""
        dtp = tp[:-1] - tp[1:]
        p = tp + fp
        dp = p[:-1] - p[1:]
        slope = _divide(dtp, np.maximum(dp, 0))
        intercept = tp[1:] - slope * p[1:]
        both = (p[:-1] > 0) & (p[1:] > 0)
        ratio = np.where(both, _divide(p[:-1], np.maximum(p[1:], 0)), 1.0)
        with np.errstate(divide="ignore"):
            log_ratio = np.where(ratio > 0, np.log(np.where(ratio > 0, ratio, 1.0)), 0.0)
        increment = _divide(slope * (dtp + intercept * log_ratio),
                            np.maximum(tp[1:] + fn[1:], 0))
        return float(np.sum(increment))
