"""The loss part of a step plan: which tensor each loss head reads, and the head calls.

A cross-entropy head applies the model's final softmax / sigmoid itself when it can: the graph
rewrite that decides it is a loss-head rule (graph/loss_head_rules.py), applied with the other
rules before planning. Here the plan only reads the rewritten graph: output i is what head i
reads, and `graph.fused_heads` says which heads apply the activation (they get logits and
compute p - y directly).

Each output with a loss gets its own labels and sample-weight arrays, filled by the trainer
before each step; the head kernels write their stats, and metric planners add their kernels
after them, reading the same buffers. A sequence output is read as one row per step
(sequence_heads.py), a cross-entropy's image output as one row per pixel (pixel_heads.py).
"""

from dataclasses import dataclass, field

import numpy as np

from ..binding import constants as dnnl
from ..binding.memory import Memory, MemoryDesc
from ..ops.losses.head import keras_order_tag
from .pixel_heads import as_image, pixel_buffers, pixel_rows, reads_pixels
from .sequence_heads import as_sequence, sequence_rows


@dataclass
class OutputLoss:
    """One loss of the plan.

    Attributes:
        head: a kiln.ops.losses LossHead.
        weight: the output's loss_weight (scales the gradient and the total).
        output: index in graph.outputs.
    """

    head: object
    weight: float = 1.0
    output: int = 0


@dataclass
class HeadView:
    """What a planned head leaves for the trainer and metric kernels (arrays of the plan)."""

    loss: OutputLoss
    labels: np.ndarray
    weights: np.ndarray
    outputs: np.ndarray = None
    stats: np.ndarray = None
    ones: np.ndarray = field(default=None)
    logits_tensor: object = None
    fused: bool = False
    rewrite: object = None    # the graph's FusedHead for this output (None: not fused)
    mask_tensor: object = None  # the output's Keras mask (a sequence output's loss reads it)
    # a sequence output (batch, steps, classes) is read as one row per step: `ones` and
    # `step_weights` are then per step, the mask (and the sample weights) of each row
    sequence: bool = False
    step_weights: np.ndarray = None
    # an image output read by a cross-entropy as one row per pixel (pixel_heads.py):
    # `row_labels` are the labels' bytes as rows, `step_weights` the sample weights per row
    pixels: bool = False
    row_labels: np.ndarray = None

    @property
    def metric_weights(self):
        """The sample weights a weighted metric reads, one per row it reads."""
        return self.step_weights if self.sequence or self.pixels else self.weights

    @property
    def classes_first(self):
        """The classes are axis 1 of a channels_first image (not the last Keras axis)."""
        return self.pixels and self.logits_tensor.data_format == "channels_first"

    @property
    def keras_outputs(self):
        """A pixel view's output rows in the shape Keras shows the output (a view)."""
        _, classes, height, width = self.logits_tensor.dims
        image = self.outputs.reshape(len(self.labels), height, width, classes)
        return image.transpose(0, 3, 1, 2) if self.classes_first else image

    def keras_weights(self, weights):
        """A pixel view's metric weights (ones, or one per row) as Keras is given them."""
        if weights is self.ones:
            return None
        return self.weights if weights is self.step_weights else weights

    @property
    def skip(self):
        """The node the head took over and reads the input of (a final ActivationOp), or None."""
        rewrite = self.rewrite
        return rewrite.taken if rewrite is not None and rewrite.node is None else None

    @property
    def replace(self):
        """(node, op planned in its place without its activation) for an activation taken
        out of a DenseOp, or None."""
        rewrite = self.rewrite
        if rewrite is None or rewrite.node is None:
            return None
        return rewrite.taken, rewrite.node.op

    @property
    def label_rows(self):
        """The labels as the head and metric kernels read them: one row per sample (an
        image-shaped output's labels flattened in Keras order; a view, so the trainer's
        writes show)."""
        labels = self.labels
        if self.row_labels is not None:
            return self.row_labels
        if self.sequence:  # one row (or class id) per step
            return labels.reshape(labels.shape[0] * labels.shape[1], *labels.shape[2:])
        return labels if labels.ndim <= 2 else labels.reshape(len(labels), -1)


def resolve(graph, losses, batch_size):
    """HeadViews for `losses` (OutputLoss list): the tensor each head reads (the rewritten
    graph's output) and whether the head applies the final activation itself."""
    views = []
    for loss in losses:
        tensor = graph.outputs[loss.output]
        head = loss.head
        head.class_axis(tensor.shape, tensor.data_format)  # a clear error for another axis
        rewrite = (graph.fused_heads or {}).get(loss.output)
        if reads_pixels(head, tensor):
            labels, row_labels, weights = pixel_buffers(head, tensor, batch_size)
            # the metrics read one weight per row: ones, or the sample weights' bytes
            views.append(HeadView(loss, labels, weights, ones=np.ones(weights.size, np.float32),
                                  logits_tensor=tensor, fused=rewrite is not None,
                                  rewrite=rewrite, pixels=True, row_labels=row_labels,
                                  step_weights=weights.reshape(-1)))
            continue
        labels = np.zeros((batch_size, *head.label_shape(tensor.shape[1:])), np.float32)
        # a sequence output's sample weights are per step, (batch, steps), as Keras wants them
        sequence = len(tensor.shape) == 3
        weights = np.ones((batch_size, tensor.shape[1]) if sequence else batch_size, np.float32)
        views.append(HeadView(loss, labels, weights,
                              ones=np.ones(batch_size, np.float32), logits_tensor=tensor,
                              fused=rewrite is not None, rewrite=rewrite,
                              mask_tensor=graph.output_masks[loss.output]))
    return views


def plan_heads(builder, views, values, want_grad):
    """Add every head's kernel; returns [(logits tensor, gradient Memory or None)]."""
    grads = []
    for view in views:
        loss = view.loss
        x = values[id(view.logits_tensor)]
        if view.pixels:  # one row of classes per pixel (pixel_heads.py)
            view.outputs, view.stats, grad = loss.head.plan_rows(
                builder, pixel_rows(builder, view, x), view.row_labels, view.step_weights,
                loss.weight, want_grad, view.fused)
            grads.append((view.logits_tensor, None if grad is None else as_image(grad, x.dims)))
            continue
        # labels of an image-shaped output are read per sample as one row (Keras order)
        # (a video: TimeDistributed's per-element losses; a sequence: one row per step)
        rows = len(x.dims) in (4, 5)
        labels = view.labels.reshape(len(view.labels), -1) if rows else view.labels
        weights = view.weights
        sequence = len(x.dims) == 3
        if sequence:  # one row per step, weighted by the output's mask
            mask = view.mask_tensor
            x, labels, weights = sequence_rows(
                builder, view, x, None if mask is None else values[id(mask)])
        view.outputs, view.stats, grad = loss.head.plan(
            builder, x, labels, weights, loss.weight, want_grad, view.fused)
        if grad is not None and sequence:
            grad = as_sequence(grad, values[id(view.logits_tensor)].dims)
        if grad is not None and len(x.dims) == 4:
            # the head wrote (N, features) rows: the same bytes are the 4D gradient
            grad = Memory(MemoryDesc.with_tag(x.dims, dnnl.f32, keras_order_tag(x)),
                          grad.storage)
        elif grad is not None and len(x.dims) == 5:
            grad = Memory(MemoryDesc.with_tag(x.dims, dnnl.f32), grad.storage)
        grads.append((view.logits_tensor, grad))
    return grads
