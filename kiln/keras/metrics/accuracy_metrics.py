"""Accuracy metrics (`keras.metrics.*Accuracy` and their functions), Keras 3 semantics.

In a plan each is one kernel pass over the output and labels; the accuracy a cross-entropy
head already counts (argmax hits for the softmax head, threshold hits for the sigmoid head)
is read from the head's stats instead, so the classic softmax + accuracy step adds nothing.
"""

import numpy as np

from ...ops.losses import CORRECT
from ...ops.losses import metric_kernels as kernels
from .reduction_metrics import MeanMetricWrapper


def categorical_accuracy(y_true, y_pred):
    return (np.argmax(y_true, axis=-1) == np.argmax(y_pred, axis=-1)).astype(np.float32)


def _ids(y_true, y_pred):
    ids = np.asarray(y_true)
    if ids.ndim == np.ndim(y_pred) and ids.shape[-1] == 1:
        ids = ids[..., 0]
    return ids


def sparse_categorical_accuracy(y_true, y_pred):
    return (_ids(y_true, y_pred) == np.argmax(y_pred, axis=-1)).astype(np.float32)


def binary_accuracy(y_true, y_pred, threshold=0.5):
    y_pred = np.asarray(y_pred)
    y_true = np.asarray(y_true)
    if y_true.ndim == y_pred.ndim - 1 and y_pred.shape[-1] == 1:
        y_true = y_true[..., None]
    return np.mean(y_true == (y_pred > threshold).astype(y_true.dtype), axis=-1)


def _in_top_k(ids, y_pred, k):
    y_pred = np.asarray(y_pred)
    target = np.take_along_axis(y_pred, ids.astype(np.int64)[..., None], axis=-1)
    return (np.sum(y_pred > target, axis=-1) < k).astype(np.float32)


def top_k_categorical_accuracy(y_true, y_pred, k=5):
    return _in_top_k(np.argmax(y_true, axis=-1), y_pred, k)


def sparse_top_k_categorical_accuracy(y_true, y_pred, k=5):
    return _in_top_k(_ids(y_true, y_pred), y_pred, k)


class _KernelAccuracy(MeanMetricWrapper):
    """An accuracy with a plan kernel; `head_accuracy` names the head count it can reuse."""

    head_accuracy = None
    sparse_labels = False  # the kernel reads class ids (N,) instead of rows (N, K)

    def plan_update(self, builder, view, weights):
        head = view.loss.head
        if head.sparse != self.sparse_labels:
            given = "class ids" if head.sparse else "one label row per sample"
            raise ValueError(f"metric '{self.name}': the loss of its output takes {given}; "
                             f"use 'accuracy' to let kiln pick the matching accuracy")
        if getattr(view, "classes_first", False):
            raise ValueError(f"metric '{self.name}': Keras 3 takes the argmax over the last "
                             "axis, the width of this channels_first output, not its classes "
                             "(axis 1); use channels_last to get a per-pixel accuracy")
        # (the head counts every row: a sequence's masked steps too)
        if (weights is view.ones and not getattr(view, "sequence", False)
                and self.head_accuracy is not None
                and head.accuracy == self.head_accuracy) and (
                head.accuracy != "binary" or self._fn_kwargs.get("threshold") == 0.5):
            stats, count = view.stats, float(len(view.ones))  # one per row it counts
            state = self.state

            def from_head_stats():
                state[0] += stats[CORRECT]
                state[1] += count

            return from_head_stats
        builder.add_forward(builder.kernel(self._kernel, self._arguments(view, weights),
                                           f"{self.name} metric"))
        return None


class CategoricalAccuracy(_KernelAccuracy):
    head_accuracy = "categorical"
    _kernel = staticmethod(kernels.categorical_accuracy_kernel)

    def __init__(self, name="categorical_accuracy", dtype=None):
        super().__init__(categorical_accuracy, name=name, dtype=dtype)

    def _arguments(self, view, weights):
        return view.outputs, view.label_rows, weights, 1, self.state


class SparseCategoricalAccuracy(_KernelAccuracy):
    sparse_labels = True
    head_accuracy = "sparse_categorical"
    _kernel = staticmethod(kernels.sparse_accuracy_kernel)

    def __init__(self, name="sparse_categorical_accuracy", dtype=None):
        super().__init__(sparse_categorical_accuracy, name=name, dtype=dtype)

    def _arguments(self, view, weights):
        return view.outputs, view.label_rows, weights, 1, self.state


class BinaryAccuracy(_KernelAccuracy):
    head_accuracy = "binary"
    _kernel = staticmethod(kernels.binary_accuracy_kernel)

    def __init__(self, name="binary_accuracy", dtype=None, threshold=0.5):
        super().__init__(binary_accuracy, name=name, dtype=dtype, threshold=threshold)
        self.threshold = threshold

    def _arguments(self, view, weights):
        return view.outputs, view.label_rows, weights, np.float32(self.threshold), self.state


class TopKCategoricalAccuracy(_KernelAccuracy):
    _kernel = staticmethod(kernels.categorical_accuracy_kernel)

    def __init__(self, k=5, name="top_k_categorical_accuracy", dtype=None):
        super().__init__(top_k_categorical_accuracy, name=name, dtype=dtype, k=k)
        self.k = k

    def _arguments(self, view, weights):
        return view.outputs, view.label_rows, weights, self.k, self.state


class SparseTopKCategoricalAccuracy(_KernelAccuracy):
    sparse_labels = True
    _kernel = staticmethod(kernels.sparse_accuracy_kernel)

    def __init__(self, k=5, name="sparse_top_k_categorical_accuracy", dtype=None):
        super().__init__(sparse_top_k_categorical_accuracy, name=name, dtype=dtype, k=k)
        self.k = k

    def _arguments(self, view, weights):
        return view.outputs, view.label_rows, weights, self.k, self.state
