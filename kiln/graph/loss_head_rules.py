"""Loss-head rules: a cross-entropy head applies the model's final softmax / sigmoid itself.

Whatever layer precedes the activation, the head then gets logits and computes p - y directly
(one pass) instead of a log, a division and an activation backward. The rewrite applies only
where the activation's output is read by no one but the loss (rewrite.py checks that): an
`ActivationOp` node (or a `SoftmaxOp` over the head's class axis) is dropped
and the head reads its input; an activation fused into a DenseOp is taken out of that DenseOp
(same weights, no eltwise post-op). The plan learns which heads fused from the rewritten
graph's `fused_heads` (plan/loss_plan.py).

Each rule is `rule(op, tensor, head)`: the op computing a model output, that output (a
SymbolicTensor) and the output's loss head (kiln.ops.losses). It returns None, READ_INPUT or
the op to plan in place of `op`.
"""


from ..ops import ActivationOp, DenseOp
from ..ops.softmax import SoftmaxOp
from .rewrite import READ_INPUT


def head_applies_final_activation(op, tensor, head):
    """ActivationOp(softmax | sigmoid), or a SoftmaxOp, that the head can apply -> the node is
    dropped, the head reads its input. A softmax only over the axis the head takes its classes
    from: an Activation's softmax is over the last Keras axis, which is not the classes of a
    channels_first image (the head then reads the probabilities, as Keras does)."""
    if isinstance(op, ActivationOp) and op.activation == "softmax":
        return READ_INPUT if _softmax_over_classes(-1, tensor, head) else None
    if isinstance(op, ActivationOp) and head.can_fuse(op.activation):
        return READ_INPUT
    if isinstance(op, SoftmaxOp) and op.kind == "softmax" and isinstance(op.axis, int) \
            and _softmax_over_classes(op.axis, tensor, head):
        return READ_INPUT
    return None


def _softmax_over_classes(axis, tensor, head):
    """Whether a softmax over Keras axis `axis` of output `tensor` is over `head`'s classes."""
    shape = tensor.shape
    rank = len(shape)
    if not head.can_fuse("softmax") or not -rank < axis < rank or tensor.flattened:
        return False
    try:
        return axis % rank == head.class_axis(shape, tensor.data_format)
    except ValueError:
        return False  # an axis the head refuses: planning the head says why


def head_takes_dense_activation(op, tensor, head):
    """DenseOp(activation the head can apply) -> the same DenseOp without its activation."""
    if isinstance(op, DenseOp) and head.can_fuse(op.activation):
        return op.replace(activation=None)
    return None
