"""Graph rewrites applied before planning: a producer and its only consumer become one op.

The classic cifar10_cnn writes `Conv2D(32, (3, 3))` then `Activation('relu')`: two layers,
but one oneDNN primitive with an eltwise post-op does both, and saves a pass over the tensor
forward. Parameter names stay those of the conv/dense op, so weights are unaffected.
Both classic examples also write `MaxPooling2D((2, 2))` then `Dropout(0.25)`: one fused op
(`MaxPoolDropout`) does both in one pass forward and one backward.

A custom layer's `x * scale + bias` (keras.ops on per-channel weights) then a relu: three
BroadcastBinary / Activation ops become one ChannelAffine (one oneDNN binary call with
post-ops forward, one pass backward).

A convolution followed by that ChannelAffine becomes one convolution again, on weights
scaled per output channel (Conv2DChannelAffine): the custom layer costs what Conv2D's own bias
and relu cost.

A rewrite applies only where the producer's output has exactly one consumer and is not a
model output: otherwise someone else still needs the unfused tensor.
"""

import copy

from ..ops import (
    FUSABLE,
    Activation,
    Add,
    BatchNorm,
    Conv2D,
    Dense,
    Dropout,
    MaxPoolDropout,
    Pooling2D,
)
from ..ops.batch_norm_folding import fold_into_conv
from ..ops.broadcast import BroadcastBinary
from ..ops.channel_affine import ChannelAffine, per_channel
from ..ops.conv2d_channel_affine import Conv2DChannelAffine
from ..ops.conv2d_residual import Conv2DResidual
from ..ops.eltwise import known as known_activation
from ..ops.eltwise import post_ops
from .symbolic import Node


def fold_activation(producer, consumer):
    """Conv2D/Dense without activation + Activation(relu|tanh|sigmoid) -> one op."""
    if (isinstance(consumer, Activation) and consumer.activation in FUSABLE
            and isinstance(producer, (Conv2D, Dense))
            and producer.activation in (None, "linear")):
        return producer.replace(activation=consumer.activation)
    return None


def fold_activation_for_inference(producer, consumer):
    """Conv2D/Dense without activation + any activation oneDNN has post-ops for (gelu, silu,
    mish, hard_silu, ...) -> one op, in inference plans only: training keeps the activations
    whose backward needs their input (not their output) separate (see ops/eltwise.py)."""
    if (isinstance(consumer, Activation) and known_activation(consumer.activation)
            and post_ops(consumer.activation) is not None
            and isinstance(producer, (Conv2D, Dense))
            and producer.activation in (None, "linear")):
        return producer.replace(activation=consumer.activation)
    return None


def fold_relu(producer, consumer):
    """BatchNorm (oneDNN's fuse_norm_relu) or Add (an eltwise post-op) + Activation('relu')
    -> one op: a residual block's normalize-then-relu and add-then-relu."""
    if not (isinstance(consumer, Activation) and consumer.activation == "relu"):
        return None
    if isinstance(producer, BatchNorm) and not producer.fuse_relu:
        merged = copy.copy(producer)
        merged.fuse_relu = True
        return merged
    if isinstance(producer, Add) and producer.activation is None:
        merged = copy.copy(producer)
        merged.activation = "relu"
        return merged
    return None


def _per_channel_operand(op, operation):
    """The (short, dims, tag) of a BroadcastBinary `x (operation) parameter` whose parameter
    is one value per channel, else None."""
    if (isinstance(op, BroadcastBinary) and op.operation == operation
            and op.operand is not None and per_channel(op.operand[1])):
        return op.operand
    return None


def fold_channel_affine(producer, consumer):
    """x * scale (per channel) + shift (per channel, the same layer's) -> one ChannelAffine;
    ChannelAffine, or a per-channel add or multiply, + Activation('relu') -> with the relu."""
    relu = isinstance(consumer, Activation) and consumer.activation == "relu"
    if isinstance(producer, ChannelAffine) and producer.activation is None and relu:
        merged = copy.copy(producer)
        merged.activation = "relu"
        return merged
    scale = _per_channel_operand(producer, "multiply")
    shift = _per_channel_operand(consumer, "add")
    if (scale is not None and shift is not None and producer.name == consumer.name
            and scale[1] == shift[1]):
        return ChannelAffine(producer.name, scale=scale, shift=shift)
    if relu:
        for operation, role in (("add", "shift"), ("multiply", "scale")):
            operand = _per_channel_operand(producer, operation)
            if operand is not None:
                return ChannelAffine(producer.name, **{role: operand}, activation="relu")
    return None


def fold_conv_channel_affine(producer, consumer):
    """Conv2D without activation + ChannelAffine of its filters -> one Conv2DChannelAffine
    (training and inference: the rewrite is exact, see conv2d_channel_affine.py)."""
    if (isinstance(consumer, ChannelAffine) and type(producer) is Conv2D
            and producer.activation in (None, "linear") and producer.channel_affine is None
            and consumer.operand_dims == (1, producer.filters, 1, 1)):
        return Conv2DChannelAffine(producer, consumer)
    return None


def fold_pool_dropout(producer, consumer):
    """A 2x2/2 max Pooling2D + Dropout -> one MaxPoolDropout."""
    if (isinstance(consumer, Dropout) and isinstance(producer, Pooling2D)
            and MaxPoolDropout.applies_to(producer, consumer)):
        return MaxPoolDropout(producer, consumer)
    return None


def fold_batch_norm(producer, consumer):
    """Conv2D without activation + BatchNorm -> one Conv2D with the per-channel affine of the
    moving statistics as post-ops (inference plans only: training needs batch statistics)."""
    if (isinstance(consumer, BatchNorm) and isinstance(producer, Conv2D)
            and producer.activation in (None, "linear") and producer.channel_affine is None):
        return fold_into_conv(producer, consumer)
    return None


def fold_residual_add(producers, consumer, writable):
    """Add(a, Conv2D(x)) [+ relu] -> one Conv2DResidual(x, a): the convolution adds `a` with a
    sum post-op, writing its output over `a` (inference plans only: training's Add backward
    feeds both branches). `producers` holds, per input of the Add, the op of a producer the
    rule may absorb (one consumer, not a model output) or None; `writable[i]` says whether
    input i may be overwritten when the Add runs (see _overwritable). Returns (merged op,
    position of the absorbed input) or None."""
    if not (isinstance(consumer, Add) and len(producers) == 2):
        return None
    # the later input first: in a ResNet block that is the main branch, so the shortcut
    # (the block's input, or a 1x1 projection) is the one the convolution accumulates into
    for position in (1, 0):
        producer = producers[position]
        if (isinstance(producer, Conv2D) and producer.activation in (None, "linear")
                and writable[1 - position]):
            return Conv2DResidual(producer, consumer.activation), position
    return None


RULES = (fold_activation, fold_relu, fold_pool_dropout, fold_channel_affine,
         fold_conv_channel_affine)
INFERENCE_RULES = (fold_batch_norm, fold_activation_for_inference, fold_residual_add)
# rules over a consumer with several inputs; they run once the one-input rules are done, so
# a batch norm is folded into its convolution and a relu into its add before
MERGE_RULES = (fold_residual_add,)


def fuse(graph, rules=RULES):
    """A new Graph with every applicable pair folded (the traced graph is not modified)."""
    nodes = list(graph.nodes)
    outputs = {id(t) for t in graph.outputs}
    single = [rule for rule in rules if rule not in MERGE_RULES]
    merging = [rule for rule in rules if rule in MERGE_RULES]
    while _fold_once(nodes, outputs, single) or _fold_merge_once(nodes, outputs, merging):
        pass
    return graph.with_nodes(nodes)


def _absorbable(nodes, outputs):
    """{tensor id: its producer node} for tensors read by exactly one node and not a model
    output: the producers a rule may fold into their consumer."""
    readers = {}
    for node in nodes:
        for tensor in node.inputs:
            readers[id(tensor)] = readers.get(id(tensor), 0) + 1
    return {id(node.output): node for node in nodes
            if readers.get(id(node.output)) == 1 and id(node.output) not in outputs}


def _fold_once(nodes, outputs, rules):
    """Fold the first (producer, one-input consumer) pair a rule accepts; True if one was."""
    producer_of = _absorbable(nodes, outputs)
    for index, node in enumerate(nodes):
        if len(node.inputs) != 1 or id(node.inputs[0]) not in producer_of:
            continue
        producer = producer_of[id(node.inputs[0])]
        for rule in rules:
            merged = rule(producer.op, node.op)
            if merged is not None:
                nodes[index] = Node(merged, producer.inputs, node.output)
                nodes.remove(producer)
                return True
    return False


# ops whose output is a buffer of their own (never a view of an input, as Flatten's or an
# inference Dropout's is), so overwriting it changes no other tensor
_OWN_OUTPUT = (Conv2D, Conv2DResidual)


def _overwritable(tensor, index, nodes, outputs, absorbed):
    """Whether node `index` may write over `tensor`: it has a buffer of its own, is no model
    output, every other reader runs before node `index`, and `absorbed` (the producer the
    fold moves to node `index`) does not read it."""
    producer = next((node for node in nodes if node.output is tensor), None)
    if (producer is None or not isinstance(producer.op, _OWN_OUTPUT)
            or id(tensor) in outputs or any(t is tensor for t in absorbed.inputs)):
        return False
    return all(position < index for position, node in enumerate(nodes)
               if any(t is tensor for t in node.inputs) and position != index)


def _fold_merge_once(nodes, outputs, rules):
    """Fold the first producer of a several-input consumer a rule accepts: the merged op
    reads the producer's inputs, then the consumer's other inputs in order."""
    producer_of = _absorbable(nodes, outputs)
    for index, node in enumerate(nodes):
        if len(node.inputs) != 2:
            continue
        producers = [producer_of.get(id(t)) for t in node.inputs]
        ops = [None if p is None or len(p.inputs) != 1 else p.op for p in producers]
        writable = [producers[1 - i] is not None and _overwritable(
            t, index, nodes, outputs, producers[1 - i]) for i, t in enumerate(node.inputs)]
        for rule in rules:
            folded = rule(ops, node.op, writable)
            if folded is not None:
                merged, position = folded
                producer = producers[position]
                others = tuple(t for i, t in enumerate(node.inputs) if i != position)
                nodes[index] = Node(merged, tuple(producer.inputs) + others, node.output)
                nodes.remove(producer)
                return True
    return False
