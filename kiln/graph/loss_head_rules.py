"""Loss-head rules: a cross-entropy head applies the model's final softmax / sigmoid itself.

Whatever layer precedes the activation, the head then gets logits and computes p - y directly
(one pass) instead of a log, a division and an activation backward. The rewrite applies only
where the activation's output is read by no one but the loss (rewrite.py checks that): an
`ActivationOp` node (or a `SoftmaxOp` over the last axis of a (batch, classes) output) is dropped
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
    """ActivationOp(softmax | sigmoid), or a SoftmaxOp over the last axis of a 2D output, that the
    head can apply -> the node is dropped, the head reads its input."""
    if isinstance(op, ActivationOp) and head.can_fuse(op.activation) or (
            isinstance(op, SoftmaxOp) and op.kind == "softmax"
            and len(tensor.dims) == 2 and op.axis in (-1, 1)
            and head.can_fuse("softmax")):
        return READ_INPUT
    return None


def head_takes_dense_activation(op, tensor, head):
    """DenseOp(activation the head can apply) -> the same DenseOp without its activation."""
    if isinstance(op, DenseOp) and head.can_fuse(op.activation):
        return op.replace(activation=None)
    return None
