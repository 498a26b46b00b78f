"""Categorical and sparse categorical cross-entropy over many rows at once: an image output's
pixels, each a row of class scores (a segmentation map read as (N*H*W, classes)).

Same values as categorical.py's kernels, planned for row counts where one thread would be the
bottleneck: the softmax over the class axis runs as one oneDNN softmax primitive, then one
parallel numba pass per row reads the probabilities, adds the weighted loss and the argmax hit
(Keras' accuracy) and writes the gradient w.r.t. the logits, p * sum(y) - y where no
probability is clipped (see categorical.py for the clip's zero slope): the fused softmax
+ cross-entropy stays one pass over (rows, classes), nothing allocated per step.
From logits, log-softmax needs log(sum(exp(z))): it is z - log(p) at the row's largest
probability (at least 1 / classes, so its log never underflows), which the pass finds anyway.
"""

import numpy as np

from ..numba_config import PARALLEL, SERIAL, njit, prange
from ..softmax import SoftmaxOp
from .head import CORRECT, LOSS


@njit(**PARALLEL)
def softmax_rows_sparse(logits, probabilities, ids, weights, grad, stats, epsilon,
                        from_logits, scale, want_grad):
    n, k = probabilities.shape
    total, correct = 0.0, 0.0
    for row in prange(n):
        label = int(ids[row])
        best, arg = probabilities[row, 0], 0
        for j in range(1, k):
            if probabilities[row, j] > best:
                best, arg = probabilities[row, j], j
        if from_logits:
            row_loss = logits[row, arg] - np.log(best) - logits[row, label]
        else:
            row_loss = -np.log(min(max(probabilities[row, label], epsilon), 1.0 - epsilon))
        w = weights[row]
        total += w * row_loss
        correct += 1.0 if arg == label else 0.0
        if want_grad:
            q = probabilities[row, label]
            coefficient = w * scale / n if from_logits or epsilon < q < 1.0 - epsilon else 0.0
            for j in range(k):
                grad[row, j] = probabilities[row, j] * coefficient
            grad[row, label] -= coefficient
    stats[LOSS] = total / n
    stats[CORRECT] = correct


@njit(**SERIAL)
def clipped_gradient_row(p, labels, keep, spread, epsilon, from_logits, coefficient, grad):
    """One row's gradient w.r.t. the logits of -sum(y * log(clip(softmax(z)))):
    p * sum(y * m) - y * m, m = [eps < p < 1 - eps] (1 everywhere from logits); Keras's clip
    has zero slope where it clips."""
    k = p.shape[0]
    kept = 0.0
    for j in range(k):
        if from_logits or epsilon < p[j] < 1.0 - epsilon:
            kept += labels[j] * keep + spread
    for j in range(k):
        inside = from_logits or epsilon < p[j] < 1.0 - epsilon
        y = (labels[j] * keep + spread) if inside else 0.0
        grad[j] = (p[j] * kept - y) * coefficient


@njit(**PARALLEL)
def softmax_rows_dense(logits, probabilities, labels, weights, grad, stats, epsilon, smoothing,
                       from_logits, scale, want_grad):
    n, k = probabilities.shape
    keep, spread = 1.0 - smoothing, smoothing / k
    total, correct = 0.0, 0.0
    for row in prange(n):
        best_p, arg_p, best_y, arg_y = probabilities[row, 0], 0, labels[row, 0], 0
        for j in range(1, k):
            if probabilities[row, j] > best_p:
                best_p, arg_p = probabilities[row, j], j
            if labels[row, j] > best_y:
                best_y, arg_y = labels[row, j], j
        log_norm = logits[row, arg_p] - np.log(best_p)
        row_loss = 0.0
        for j in range(k):
            y = labels[row, j] * keep + spread
            if from_logits:
                row_loss += y * (log_norm - logits[row, j])
            else:
                row_loss -= y * np.log(min(max(probabilities[row, j], epsilon), 1.0 - epsilon))
        w = weights[row]
        total += w * row_loss
        correct += 1.0 if arg_p == arg_y else 0.0
        if want_grad:
            clipped_gradient_row(probabilities[row], labels[row], keep, spread, epsilon,
                                 from_logits, w * scale / n, grad[row])
    stats[LOSS] = total / n
    stats[CORRECT] = correct


@njit(**PARALLEL)
def normalized_rows_sparse(predictions, ids, weights, grad, stats, epsilon, scale, want_grad):
    """Keras on probabilities: q = p / sum(p), loss -log(clip(q[label])), differentiated
    exactly, one row per thread (also categorical.py's kernel on a (batch, classes) output)."""
    n, k = predictions.shape
    total, correct = 0.0, 0.0
    for row in prange(n):
        label = int(ids[row])
        s, best, arg = 0.0, predictions[row, 0], 0
        for j in range(k):
            s += predictions[row, j]
            if predictions[row, j] > best:
                best, arg = predictions[row, j], j
        q = predictions[row, label] / s
        w = weights[row]
        total += w * -np.log(min(max(q, epsilon), 1.0 - epsilon))
        correct += 1.0 if arg == label else 0.0
        if want_grad:
            coefficient = w * scale / n
            inside = 1.0 if epsilon < q < 1.0 - epsilon else 0.0
            for j in range(k):
                grad[row, j] = inside / s * coefficient
            grad[row, label] -= inside / q / s * coefficient
    stats[LOSS] = total / n
    stats[CORRECT] = correct


@njit(**PARALLEL)
def normalized_rows_dense(predictions, labels, weights, grad, stats, epsilon, smoothing, scale,
                          want_grad):
    """Keras on probabilities: q = p / sum(p), loss -sum(y * log(clip(q))) with smoothed
    labels, differentiated exactly (the clip's slope is 0 outside [eps, 1 - eps]), one row
    per thread."""
    n, k = predictions.shape
    keep, spread = 1.0 - smoothing, smoothing / k
    total, correct = 0.0, 0.0
    for row in prange(n):
        s = 0.0
        best_p, arg_p, best_y, arg_y = predictions[row, 0], 0, labels[row, 0], 0
        for j in range(k):
            s += predictions[row, j]
            if predictions[row, j] > best_p:
                best_p, arg_p = predictions[row, j], j
            if labels[row, j] > best_y:
                best_y, arg_y = labels[row, j], j
        row_loss, inside = 0.0, 0.0
        for j in range(k):
            q = predictions[row, j] / s
            y = labels[row, j] * keep + spread
            row_loss -= y * np.log(min(max(q, epsilon), 1.0 - epsilon))
            if epsilon < q < 1.0 - epsilon:
                inside += y
        w = weights[row]
        total += w * row_loss
        correct += 1.0 if arg_p == arg_y else 0.0
        if want_grad:
            # d/dp_i of -sum_j y_j log(clip(p_j / s)) = (sum_j y_j m_j - y_i m_i / q_i) / s
            coefficient = w * scale / n
            for j in range(k):
                q = predictions[row, j] / s
                own = 0.0
                if epsilon < q < 1.0 - epsilon:
                    own = (labels[row, j] * keep + spread) / q
                grad[row, j] = (inside - own) / s * coefficient
    stats[LOSS] = total / n
    stats[CORRECT] = correct


def plan_rows(head, builder, x, labels, weights, scale, want_grad, fused):
    """Plan CategoricalCrossentropyHead `head` on the plain (rows, classes) Tensor `x` (logits
    when `fused` or from logits, else probabilities), with row labels (rows, classes) or class
    ids (rows,) and row weights (rows,). Returns (the model output's rows, stats, gradient
    Memory w.r.t. `x` or None), as LossHead.plan."""
    stats = head.stats()
    eps, scale = np.float32(head.epsilon), np.float32(scale)
    smoothing = np.float32(head.label_smoothing)
    values = x.memory.as_array().reshape(x.dims)
    grad_memory, grad = head.buffer(builder, x.dims)
    if fused or head.from_logits:
        softmax, _ = SoftmaxOp(head.name, -1).forward(builder, x, False)
        probabilities = builder.keep(softmax.memory).as_array().reshape(x.dims)
        outputs = probabilities if fused else values  # from logits, the model output is z
        if head.sparse:
            function, arguments = softmax_rows_sparse, (
                values, probabilities, labels, weights, grad, stats, eps, head.from_logits,
                scale, want_grad)
        else:
            function, arguments = softmax_rows_dense, (
                values, probabilities, labels, weights, grad, stats, eps, smoothing,
                head.from_logits, scale, want_grad)
        label = "softmax cross-entropy" if fused else "cross-entropy from logits"
    else:
        outputs = values
        if head.sparse:
            function, arguments = normalized_rows_sparse, (
                values, labels, weights, grad, stats, eps, scale, want_grad)
        else:
            function, arguments = normalized_rows_dense, (
                values, labels, weights, grad, stats, eps, smoothing, scale, want_grad)
        label = "cross-entropy on probabilities"
    builder.add_forward(builder.kernel(function, arguments, f"{head.name} {label} per pixel"))
    return outputs, stats, (grad_memory if want_grad else None)
