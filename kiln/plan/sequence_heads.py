"""A loss on a sequence output (batch, steps, classes): the head reads it as batch * steps
rows, and each row's weight is its step's sample weight (Keras wants them per step, (batch,
steps)) times the output's Keras mask.

Keras reduces a loss over every element of its loss tensor, here (batch, steps): the mean
over batch * steps rows, which is what a head computes on the (N*T, classes) view of the
plain output. With a mask, Keras weights each step by it and rescales so the sum is divided
by the number of real steps instead (`mask * total / (valid + epsilon)`); one kernel writes
those row weights from the sample weights and the step's mask before the head runs.
"""

import numpy as np

from ..binding import constants as dnnl
from ..binding.memory import Memory, MemoryDesc
from ..ops.numba_config import SERIAL, njit
from ..ops.tensor import Tensor

# Keras's backend epsilon in the mask's rescaling
EPSILON = 1e-7


@njit(**SERIAL)
def sequence_row_weights_kernel(sample_weights, mask, out, metric_ones, metric_weights,
                                masked, steps):
    """out[r] = sample_weights[r] (* mask[r] * rows / (sum(mask) + epsilon)) for the loss;
    for the metrics, which Keras weights by the mask without rescaling, metric_ones[r] =
    mask[r] / steps and metric_weights[r] = sample_weights[r] * mask[r] / steps: Keras
    averages a metric's values and weights over the steps of each sample before adding them
    up (reduce_to_samplewise_values), so with batches of different lengths (an input with a
    None axis) a step of a longer batch counts less; with one length it changes nothing."""
    scale = 1.0
    if masked:
        valid = 0.0
        for r in range(mask.size):
            valid += mask[r]
        scale = out.size / (valid + EPSILON)
    for r in range(out.size):
        weight = sample_weights[r]
        keep = mask[r] if masked else 1.0
        out[r] = weight * keep * scale if masked else weight
        metric_ones[r] = keep / steps
        metric_weights[r] = weight * keep / steps


def sequence_rows(builder, view, x, mask):
    """(rows Tensor, row labels, row weights) for head `view` on the 3D output Tensor `x`
    with `mask` (its mask's Tensor, or None); the head's gradient rows are the 3D gradient's
    plain bytes (see as_sequence)."""
    n, steps, classes = x.dims
    rows = n * steps
    plain = builder.keep(builder.reorder(x.memory, MemoryDesc.with_tag(x.dims, dnnl.f32),
                                         f"{view.loss.head.name} output to plain"))
    matrix = Tensor(plain.view(MemoryDesc.with_tag((rows, classes), dnnl.f32)), x.data_format)
    labels = view.labels.reshape(rows, *view.labels.shape[2:])
    row_weights = np.ones(rows, np.float32)
    if mask is None:
        steps_mask = np.ones(rows, np.float32)
    else:
        steps_mask = builder.reorder(mask.memory, MemoryDesc.with_tag((n, steps), dnnl.f32),
                                     f"{view.loss.head.name} mask to plain")
    # what the metrics read: one row per step (see HeadView.sequence)
    view.sequence = True
    view.ones = np.ones(rows, np.float32)
    view.step_weights = np.ones(rows, np.float32)
    builder.add_forward(builder.memory_kernel(
        sequence_row_weights_kernel,
        (view.weights.reshape(rows), steps_mask, row_weights, view.ones, view.step_weights,
         mask is not None, float(steps)),
        f"{view.loss.head.name} step weights"))
    return matrix, labels, row_weights


def as_sequence(grad, dims):
    """The head's (N*T, classes) gradient rows as the (N, T, classes) gradient."""
    return Memory(MemoryDesc.with_tag(dims, dnnl.f32), grad.storage)
