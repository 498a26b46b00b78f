"""Graph rewrites applied before planning: a producer and its only consumer become one op.

The classic cifar10_cnn writes `Conv2D(32, (3, 3))` then `Activation('relu')`: two layers,
but one oneDNN primitive with an eltwise post-op does both, and saves a pass over the tensor
forward. Parameter names stay those of the conv/dense op, so weights are unaffected.
Both classic examples also write `MaxPooling2D((2, 2))` then `Dropout(0.25)`: one fused op
(`MaxPoolDropout`) does both in one pass forward and one backward.

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
from .symbolic import Node


def fold_activation(producer, consumer):
    """Conv2D/Dense without activation + Activation(relu|tanh|sigmoid) -> one op."""
    if (isinstance(consumer, Activation) and consumer.activation in FUSABLE
            and isinstance(producer, (Conv2D, Dense))
            and producer.activation in (None, "linear")):
        merged = copy.copy(producer)
        merged.activation = consumer.activation
        return merged
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


RULES = (fold_activation, fold_relu, fold_pool_dropout)
INFERENCE_RULES = (fold_batch_norm,)


def fuse(graph, rules=RULES):
    """A new Graph with every applicable pair folded (the traced graph is not modified)."""
    nodes = list(graph.nodes)
    outputs = {id(t) for t in graph.outputs}
    changed = True
    while changed:
        changed = False
        readers = {}
        for node in nodes:
            for tensor in node.inputs:
                readers.setdefault(id(tensor), []).append(node)
        producer_of = {id(node.output): node for node in nodes}
        for index, node in enumerate(nodes):
            if len(node.inputs) != 1:
                continue
            tensor = node.inputs[0]
            producer = producer_of.get(id(tensor))
            if (producer is None or id(tensor) in outputs
                    or len(readers.get(id(tensor), ())) != 1):
                continue
            for rule in rules:
                merged = rule(producer.op, node.op)
                if merged is not None:
                    nodes[index] = Node(merged, producer.inputs, node.output)
                    nodes.remove(producer)
                    changed = True
                    break
            if changed:
                break
    return graph.with_nodes(nodes)
