"""Graph rewrites applied before planning: a producer and its only consumer become one op.

The classic cifar10_cnn writes `Conv2D(32, (3, 3))` then `Activation('relu')`: two layers,
but one oneDNN primitive with an eltwise post-op does both, and saves a pass over the tensor
forward. Parameter names stay those of the conv/dense op, so weights are unaffected.
Both classic examples also write `MaxPooling2D((2, 2))` then `Dropout(0.25)`: one fused op
(`MaxPoolDropoutOp`) does both in one pass forward and one backward.

A custom layer's `x * scale + bias` (keras.ops on per-channel weights) then a relu: three
BroadcastBinaryOp / ActivationOp ops become one ChannelAffineOp (one oneDNN binary call with
post-ops forward, one pass backward).

A convolution followed by that ChannelAffineOp becomes one convolution again, on weights
scaled per output channel (Conv2DChannelAffineOp): the custom layer costs what Conv2D's own bias
and relu cost.

A rewrite applies only where the producer's output has exactly one consumer and is not a
model output: otherwise someone else still needs the unfused tensor. rewrite.py finds those
pairs and applies the rules; rules.py lists them in the order they are tried, with the plans
each applies to (the functions here say only what they fold).
"""


from ..ops import (
    FUSABLE,
    ActivationOp,
    AddOp,
    BatchNormOp,
    Conv2DOp,
    DenseOp,
    DropoutOp,
    MaxPoolDropoutOp,
    Pooling2DOp,
)
from ..ops.batch_norm_folding import fold_into_conv
from ..ops.broadcast import BroadcastBinaryOp
from ..ops.channel_affine import ChannelAffineOp, per_channel
from ..ops.conv2d_channel_affine import Conv2DChannelAffineOp
from ..ops.conv2d_residual import Conv2DResidualOp
from ..ops.eltwise import known as known_activation
from ..ops.eltwise import post_ops


def fold_activation(producer, consumer):
    """Conv2DOp/DenseOp without activation + ActivationOp(relu|tanh|sigmoid) -> one op."""
    if (isinstance(consumer, ActivationOp) and consumer.activation in FUSABLE
            and isinstance(producer, (Conv2DOp, DenseOp))
            and producer.activation in (None, "linear")):
        return producer.replace(activation=consumer.activation)
    return None


def fold_activation_for_inference(producer, consumer):
    """Conv2DOp/DenseOp without activation + any activation oneDNN has post-ops for (gelu, silu,
    mish, hard_silu, ...) -> one op, in inference plans only: training keeps the activations
    whose backward needs their input (not their output) separate (see ops/eltwise.py)."""
    if (isinstance(consumer, ActivationOp) and known_activation(consumer.activation)
            and post_ops(consumer.activation) is not None
            and isinstance(producer, (Conv2DOp, DenseOp))
            and producer.activation in (None, "linear")):
        return producer.replace(activation=consumer.activation)
    return None


def fold_relu(producer, consumer):
    """BatchNormOp (oneDNN's fuse_norm_relu) or AddOp (an eltwise post-op) + ActivationOp('relu')
    -> one op: a residual block's normalize-then-relu and add-then-relu."""
    if not (isinstance(consumer, ActivationOp) and consumer.activation == "relu"):
        return None
    if isinstance(producer, BatchNormOp) and not producer.fuse_relu:
        return producer.replace(fuse_relu=True)
    if isinstance(producer, AddOp) and producer.activation is None:
        return producer.replace(activation="relu")
    return None


def _per_channel_operand(op, operation):
    """The (short, dims, tag) of a BroadcastBinaryOp `x (operation) parameter` whose parameter
    is one value per channel, else None."""
    if (isinstance(op, BroadcastBinaryOp) and op.operation == operation
            and op.operand is not None and per_channel(op.operand[1])):
        return op.operand
    return None


def fold_channel_affine(producer, consumer):
    """x * scale (per channel) + shift (per channel, the same layer's) -> one ChannelAffineOp;
    ChannelAffineOp, or a per-channel add or multiply, + ActivationOp('relu') -> with the relu."""
    relu = isinstance(consumer, ActivationOp) and consumer.activation == "relu"
    if isinstance(producer, ChannelAffineOp) and producer.activation is None and relu:
        return producer.replace(activation="relu")
    scale = _per_channel_operand(producer, "multiply")
    shift = _per_channel_operand(consumer, "add")
    if (scale is not None and shift is not None and producer.name == consumer.name
            and scale[1] == shift[1]):
        return ChannelAffineOp(producer.name, scale=scale, shift=shift)
    if relu:
        for operation, role in (("add", "shift"), ("multiply", "scale")):
            operand = _per_channel_operand(producer, operation)
            if operand is not None:
                return ChannelAffineOp(producer.name, **{role: operand}, activation="relu")
    return None


def fold_conv_channel_affine(producer, consumer):
    """Conv2DOp without activation + ChannelAffineOp of its filters -> one Conv2DChannelAffineOp
    (training and inference: the rewrite is exact, see conv2d_channel_affine.py)."""
    if (isinstance(consumer, ChannelAffineOp) and type(producer) is Conv2DOp
            and producer.activation in (None, "linear") and producer.channel_affine is None
            and consumer.operand_dims == (1, producer.filters, 1, 1)):
        return Conv2DChannelAffineOp(producer, consumer)
    return None


def fold_pool_dropout(producer, consumer):
    """A 2x2/2 max Pooling2DOp + DropoutOp -> one MaxPoolDropoutOp."""
    if (isinstance(consumer, DropoutOp) and isinstance(producer, Pooling2DOp)
            and MaxPoolDropoutOp.applies_to(producer, consumer)):
        return MaxPoolDropoutOp(producer, consumer)
    return None


def fold_batch_norm(producer, consumer):
    """Conv2DOp without activation + BatchNormOp -> one Conv2DOp with the per-channel affine of the
    moving statistics as post-ops (inference plans only: training needs batch statistics)."""
    if (isinstance(consumer, BatchNormOp) and isinstance(producer, Conv2DOp)
            and producer.activation in (None, "linear") and producer.channel_affine is None):
        return fold_into_conv(producer, consumer)
    return None


def fold_residual_add(producers, consumer, writable):
    """AddOp(a, Conv2DOp(x)) [+ relu] -> one Conv2DResidualOp(x, a): the convolution adds `a` with a
    sum post-op, writing its output over `a` (inference plans only: training's Add backward
    feeds both branches). `producers` holds, per input of the Add, the op of a producer the
    rule may absorb (one consumer, not a model output) or None; `writable[i]` says whether
    input i may be overwritten when the Add runs (see _overwritable). Returns (merged op,
    position of the absorbed input) or None."""
    if not (isinstance(consumer, AddOp) and len(producers) == 2):
        return None
    # the later input first: in a ResNet block that is the main branch, so the shortcut
    # (the block's input, or a 1x1 projection) is the one the convolution accumulates into
    for position in (1, 0):
        producer = producers[position]
        if (isinstance(producer, Conv2DOp) and producer.activation in (None, "linear")
                and writable[1 - position]):
            return Conv2DResidualOp(producer, consumer.activation), position
    return None
