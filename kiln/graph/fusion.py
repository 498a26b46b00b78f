"""Graph rewrites applied before planning.

The classic cifar10_cnn writes `Conv2D(32, (3, 3))` then `Activation('relu')`: two layers,
but one oneDNN primitive with an eltwise post-op does both, and saves a pass over the tensor
forward. Parameter names stay those of the conv/dense op, so weights are unaffected.

Both classic examples also write `MaxPooling2D((2, 2))` then `Dropout(0.25)`: one fused op
(`MaxPoolDropout`) does both in one pass forward and one backward.
"""

import copy

from ..ops import FUSABLE, Activation, Conv2D, Dense, Dropout, MaxPoolDropout, Pooling2D


def fuse_activations(ops):
    """Fold Activation(relu|tanh|sigmoid) into a preceding Conv2D/Dense without activation."""
    fused = []
    for op in ops:
        previous = fused[-1] if fused else None
        if (isinstance(op, Activation) and op.activation in FUSABLE
                and isinstance(previous, (Conv2D, Dense))
                and previous.activation in (None, "linear")):
            merged = copy.copy(previous)
            merged.activation = op.activation
            fused[-1] = merged
            continue
        fused.append(op)
    return fused


def fuse_pool_dropout(ops):
    """Replace a 2x2/2 max Pooling2D directly followed by a Dropout with one MaxPoolDropout."""
    fused = []
    for op in ops:
        previous = fused[-1] if fused else None
        if (isinstance(op, Dropout) and isinstance(previous, Pooling2D)
                and MaxPoolDropout.applies_to(previous, op)):
            fused[-1] = MaxPoolDropout(previous, op)
            continue
        fused.append(op)
    return fused


def fuse(ops):
    """All rewrites, in order."""
    return fuse_pool_dropout(fuse_activations(ops))
