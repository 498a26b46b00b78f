"""The loss part of a step plan: which node each loss head reads, and the head calls.

A cross-entropy head applies the model's final softmax / sigmoid itself when it can (the
activation's output is read by no one but the loss): an `Activation` node (or a `Softmax` over
the last axis of a (batch, classes) output) is then skipped and
the head reads its input; an activation fused into a Dense is taken out of that Dense for the
plan (same weights, no eltwise post-op). Whatever layer precedes the activation, the head
gets logits and computes p - y directly.

Each output with a loss gets its own labels and sample-weight arrays, filled by the trainer
before each step; the head kernels write their stats, and metric planners add their kernels
after them, reading the same buffers.
"""

import copy
from dataclasses import dataclass, field

import numpy as np

from ..binding import constants as dnnl
from ..binding.memory import Memory, MemoryDesc
from ..ops import Activation, Dense
from ..ops.losses.head import keras_order_tag
from ..ops.softmax import Softmax


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
    skip: object = None       # the graph node the head replaces (a final Activation)
    replace: tuple = None     # (node, op without its activation) for an activation in a Dense

    @property
    def label_rows(self):
        """The labels as the head and metric kernels read them: one row per sample (an
        image-shaped output's labels flattened in Keras order; a view, so the trainer's
        writes show)."""
        labels = self.labels
        return labels if labels.ndim <= 2 else labels.reshape(len(labels), -1)


def resolve(graph, losses, batch_size):
    """HeadViews for `losses` (OutputLoss list): where each head reads and what it fuses."""
    views = []
    # the nodes of this graph (after fusion), not the traced ones a tensor remembers
    producers = {id(node.output): node for node in graph.nodes}
    for loss in losses:
        tensor = graph.outputs[loss.output]
        node = producers.get(id(tensor))
        readers = graph.consumers.get(id(tensor), [])
        shared = readers or sum(t is tensor for t in graph.outputs) > 1
        head = loss.head
        labels = np.zeros((batch_size, *head.label_shape(tensor.shape[1:])), np.float32)
        view = HeadView(loss, labels, np.ones(batch_size, np.float32),
                        ones=np.ones(batch_size, np.float32), logits_tensor=tensor)
        if node is not None and not shared:
            op = node.op
            if isinstance(op, Activation) and head.can_fuse(op.activation) or (
                    isinstance(op, Softmax) and op.kind == "softmax"
                    and len(tensor.dims) == 2 and op.axis in (-1, 1)
                    and head.can_fuse("softmax")):
                view.skip, view.logits_tensor, view.fused = node, node.inputs[0], True
            elif isinstance(op, Dense) and head.can_fuse(op.activation):
                bare = copy.copy(op)
                bare.activation = None
                view.replace, view.fused = (node, bare), True
        views.append(view)
    return views


def plan_heads(builder, views, values, want_grad):
    """Add every head's kernel; returns [(logits tensor, gradient Memory or None)]."""
    grads = []
    for view in views:
        loss = view.loss
        x = values[id(view.logits_tensor)]
        # labels of an image-shaped output are read per sample as one row (Keras order)
        labels = view.labels.reshape(len(view.labels), -1) if len(x.dims) == 4 else view.labels
        view.outputs, view.stats, grad = loss.head.plan(
            builder, x, labels, view.weights, loss.weight, want_grad, view.fused)
        if grad is not None and len(x.dims) == 4:
            # the head wrote (N, features) rows: the same bytes are the 4D gradient
            grad = Memory(MemoryDesc.with_tag(x.dims, dnnl.f32, keras_order_tag(x)),
                          grad.storage)
        grads.append((view.logits_tensor, grad))
    return grads
