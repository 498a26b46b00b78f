"""Categorical and sparse categorical cross-entropy, as Keras 3 computes them.

Three ways in, one kernel each for one-hot (N, K) labels and class ids (N,):
    fused softmax   the model ends with a softmax the head applies itself: p = softmax(z),
                    loss -sum(y * log(clip(p, eps, 1 - eps))) as Keras on probabilities
    from_logits     loss -sum(y * log_softmax(z)), nothing clipped
    probabilities   any other output p: normalized by its sum and clipped, as Keras does
                    (categorical_rows.py's kernels, one row per thread, for every output)
With label smoothing y becomes y * (1 - s) + s / K. The gradient of the logits form w.r.t. z
is p * sum(y) - y; the fused form differentiates the clip as Keras 3 (JAX) does, so a class
whose probability is clipped (below eps or above 1 - eps) contributes nothing:
p * sum(y * m) - y * m with m = [eps < p < 1 - eps] (a sample whose true class is saturated
below eps gives no gradient at all, as in Keras); the probabilities form differentiates the
normalization and the clip exactly.
The kernels also count argmax hits (Keras' categorical / sparse categorical accuracy on the
model's output), so the classic softmax + accuracy step makes one pass over (N, K).
An image output (a segmentation map) is read as one row per pixel and planned by
categorical_rows.py (a oneDNN softmax, then one parallel pass); `class_axis` says which
Keras `axis` kiln takes the classes from.
"""

import numpy as np

from ..numba_config import SERIAL, njit
from .categorical_rows import (
    clipped_gradient_row,
    normalized_rows_dense,
    normalized_rows_sparse,
    plan_rows,
)
from .head import CORRECT, LOSS, LossHead


@njit(**SERIAL)
def softmax_crossentropy_dense(logits, labels, weights, probabilities, grad, stats, epsilon,
                               smoothing, from_logits, scale, want_grad):
    n, k = logits.shape
    total, correct = 0.0, 0.0
    keep, spread = 1.0 - smoothing, smoothing / k
    for row in range(n):
        peak = logits[row, 0]
        for j in range(1, k):
            peak = max(peak, logits[row, j])
        norm = 0.0
        for j in range(k):
            e = np.exp(logits[row, j] - peak)
            probabilities[row, j] = e
            norm += e
        log_norm = np.log(norm)
        row_loss = 0.0
        best_p, best_y, arg_p, arg_y = -1.0, -np.inf, 0, 0
        for j in range(k):
            p = probabilities[row, j] / norm
            probabilities[row, j] = p
            y = labels[row, j] * keep + spread
            if from_logits:
                row_loss -= y * (logits[row, j] - peak - log_norm)
            else:
                row_loss -= y * np.log(min(max(p, epsilon), 1.0 - epsilon))
            if p > best_p:
                best_p, arg_p = p, j
            if labels[row, j] > best_y:
                best_y, arg_y = labels[row, j], j
        w = weights[row]
        total += w * row_loss
        correct += arg_p == arg_y
        if want_grad:
            clipped_gradient_row(probabilities[row], labels[row], keep, spread, epsilon,
                                 from_logits, w * scale / n, grad[row])
    stats[LOSS] = total / n
    stats[CORRECT] = correct


@njit(**SERIAL)
def softmax_crossentropy_sparse(logits, ids, weights, probabilities, grad, stats, epsilon,
                                from_logits, scale, want_grad):
    n, k = logits.shape
    total, correct = 0.0, 0.0
    for row in range(n):
        label = int(ids[row])
        peak = logits[row, 0]
        for j in range(1, k):
            peak = max(peak, logits[row, j])
        norm = 0.0
        for j in range(k):
            e = np.exp(logits[row, j] - peak)
            probabilities[row, j] = e
            norm += e
        best_p, arg_p = -1.0, 0
        for j in range(k):
            p = probabilities[row, j] / norm
            probabilities[row, j] = p
            if p > best_p:
                best_p, arg_p = p, j
        if from_logits:
            row_loss = -(logits[row, label] - peak - np.log(norm))
        else:
            row_loss = -np.log(min(max(probabilities[row, label], epsilon), 1.0 - epsilon))
        w = weights[row]
        total += w * row_loss
        correct += arg_p == label
        if want_grad:
            q = probabilities[row, label]
            coefficient = w * scale / n if from_logits or epsilon < q < 1.0 - epsilon else 0.0
            for j in range(k):
                grad[row, j] = probabilities[row, j] * coefficient
            grad[row, label] -= coefficient
    stats[LOSS] = total / n
    stats[CORRECT] = correct


class CategoricalCrossentropyHead(LossHead):
    """Args:
        name: the loss name (for messages).
        from_logits: the model output is logits.
        label_smoothing: Keras' label_smoothing in [0, 1] (one-hot labels only).
        sparse: labels are class ids (sparse_categorical_crossentropy).
        epsilon: Keras' backend epsilon, the clip of probabilities.
        axis: Keras' axis of the classes: the last one, or 1 of a channels_first image
            output with one-hot labels (Keras 3 takes class ids over the last axis only).
    """

    fuses = "softmax"
    # an image output is read as one row of class scores per pixel (categorical_rows.py)
    class_rows = True

    def __init__(self, name, from_logits=False, label_smoothing=0.0, sparse=False,
                 epsilon=1e-7, axis=-1):
        super().__init__(name, from_logits)
        self.label_smoothing = float(label_smoothing)
        self.sparse = sparse
        self.epsilon = epsilon
        self.axis = axis
        self.accuracy = "sparse_categorical" if sparse else "categorical"

    def class_axis(self, shape, data_format):
        """The class axis (non-negative) of an output of Keras shape `shape` (batch first)
        in `data_format`, or a ValueError naming the loss and the axis kiln cannot use."""
        rank = len(shape)
        axis = self.axis
        if not isinstance(axis, int) or not -rank < axis < rank or axis % rank == 0:
            raise ValueError(f"loss '{self.name}': argument axis must be an axis of the "
                             f"output of shape {tuple(shape)} other than the batch axis, got "
                             f"{axis!r}")
        axis %= rank
        channels_first_image = rank == 4 and data_format == "channels_first"
        if axis == rank - 1 and not channels_first_image:
            return axis
        if channels_first_image and axis == 1 and not self.sparse:
            return axis
        if channels_first_image and axis == 1:
            raise ValueError(f"loss '{self.name}': argument axis=1 (the classes of a "
                             f"channels_first output of shape {tuple(shape)}) takes one-hot "
                             "labels only: Keras 3 reads class ids over the last axis; use "
                             "categorical_crossentropy(axis=1) with one-hot labels, or "
                             "channels_last")
        where = ("the channel axis of this channels_first output, axis=1" if
                 channels_first_image else "the last axis, axis=-1")
        raise ValueError(f"loss '{self.name}': argument axis={self.axis} is axis {axis} of "
                         f"the output of shape {tuple(shape)}; kiln computes the "
                         f"cross-entropy over the classes as {where}")

    def label_shape(self, output_shape):
        # class ids: one per sample, or one per step of a sequence (per pixel of an image)
        return tuple(output_shape[:-1]) if self.sparse else tuple(output_shape)

    def plan_rows(self, builder, x, labels, weights, scale, want_grad, fused):
        """`plan` on many rows of an image output: a oneDNN softmax, then a parallel pass."""
        return plan_rows(self, builder, x, labels, weights, scale, want_grad, fused)

    def plan(self, builder, x, labels, weights, scale, want_grad, fused):
        stats = self.stats()
        eps, scale = np.float32(self.epsilon), np.float32(scale)
        if fused or self.from_logits:
            logits_memory, logits = self.plain(builder, x, self.name)
            outputs_memory, outputs = self.buffer(builder, logits.shape)
            grad_memory, grad = self.buffer(builder, logits.shape)
            if self.sparse:
                function, arguments = softmax_crossentropy_sparse, (
                    logits, labels, weights, outputs, grad, stats, eps, self.from_logits,
                    scale, want_grad)
            else:
                function, arguments = softmax_crossentropy_dense, (
                    logits, labels, weights, outputs, grad, stats, eps,
                    np.float32(self.label_smoothing), self.from_logits, scale, want_grad)
            if self.from_logits and not fused:
                outputs_memory, outputs = logits_memory, logits  # the model output is z
            label = "softmax cross-entropy" if fused else "cross-entropy from logits"
        else:
            outputs_memory, outputs = self.plain(builder, x, self.name)
            grad_memory, grad = self.buffer(builder, outputs.shape)
            if self.sparse:
                function, arguments = normalized_rows_sparse, (
                    outputs, labels, weights, grad, stats, eps, scale, want_grad)
            else:
                function, arguments = normalized_rows_dense, (
                    outputs, labels, weights, grad, stats, eps,
                    np.float32(self.label_smoothing), scale, want_grad)
            label = "cross-entropy on probabilities"
        builder.keep(outputs_memory)
        builder.add_forward(builder.kernel(function, arguments, f"{self.name} {label}"))
        return outputs, stats, (grad_memory if want_grad else None)
