"""Conv2D/Dense + Activation layers fold into one fused op, with identical results."""

import numpy as np
import pytest

from kiln import keras
from kiln.graph.rewrite import fuse
from kiln.graph.rules import RULES, named
from kiln.graph.symbolic import SymbolicTensor
from kiln.graph.topology import Graph
from kiln.keras.layers import Activation, Conv2D, Dense, Flatten, MaxPooling2D
from kiln.ops import ActivationOp, Conv2DOp, DenseOp


def fused_chain(ops, dims=(None, 3, 16, 16), rules=None):
    """The ops of a linear graph over `ops` after fusion."""
    graph = Graph.chain(ops, SymbolicTensor(dims))
    return fuse(graph, RULES if rules is None else rules).ops


def test_fold_rules():
    from kiln.ops import FlattenOp
    ops = [Conv2DOp("c", 4, (3, 3)), ActivationOp("a", "relu"),
           Conv2DOp("c2", 4, (3, 3), activation="relu"), ActivationOp("a2", "tanh"),
           FlattenOp("f"), DenseOp("d", 3), ActivationOp("s", "softmax")]
    fused = [op for op in fused_chain(ops, rules=named("activation into conv/dense"))
             if not isinstance(op, FlattenOp)]
    assert [type(op).__name__ for op in fused] == ["Conv2DOp", "Conv2DOp", "ActivationOp",
                                                   "DenseOp", "ActivationOp"]
    assert fused[0].activation == "relu" and fused[0].name == "c"
    assert ops[0].activation is None  # the original op is not modified
    assert fused[2].activation == "tanh"  # an already-activated conv keeps its Activation
    assert fused[4].activation == "softmax"  # softmax is never a post-op


def two_models(separate):
    keras.initializers.set_random_seed(0)
    if separate:
        layers = [Conv2D(8, (3, 3), input_shape=(8, 8, 3)), Activation("relu"),
                  MaxPooling2D(), Flatten(), Dense(6), Activation("tanh"), Dense(3),
                  Activation("softmax")]
    else:
        layers = [Conv2D(8, (3, 3), activation="relu", input_shape=(8, 8, 3)), MaxPooling2D(),
                  Flatten(), Dense(6, activation="tanh"), Dense(3, activation="softmax")]
    model = keras.Sequential(layers)
    model.compile(loss="categorical_crossentropy", optimizer=keras.optimizers.SGD(0.1))
    return model


@pytest.mark.parametrize("steps", [0, 3])
def test_separate_activation_layers_train_like_fused_ones(steps):
    rng = np.random.default_rng(1)
    x = rng.normal(size=(16, 8, 8, 3)).astype(np.float32)
    y = np.eye(3, dtype=np.float32)[rng.integers(0, 3, 16)]
    separate, fused = two_models(True), two_models(False)
    fused.set_weights(separate.get_weights())
    if steps:
        separate.fit(x, y, batch_size=16, epochs=steps, shuffle=False, verbose=0)
        fused.fit(x, y, batch_size=16, epochs=steps, shuffle=False, verbose=0)
    np.testing.assert_allclose(separate.predict(x), fused.predict(x), rtol=1e-5, atol=1e-6)
    for a, b in zip(separate.get_weights(), fused.get_weights()):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    assert len(separate.ops) == len(fused.ops)  # the Activation layers were folded away


def test_pool_then_dropout_rules():
    from kiln.ops import DropoutOp, MaxPoolDropoutOp, Pooling2DOp

    def pool(mode="max", size=(2, 2), strides=(2, 2), padding="valid"):
        return Pooling2DOp("p", mode, size, strides, padding)

    def kinds(ops):
        return [type(op).__name__ for op in fused_chain(ops, rules=named("max pool + dropout"))]

    conv = Conv2DOp("c", 4, (3, 3), activation="relu")
    fused = fused_chain([conv, pool(), DropoutOp("d", 0.25, seed=1)])
    assert [type(op).__name__ for op in fused] == ["Conv2DOp", "MaxPoolDropoutOp"]
    assert isinstance(fused[1], MaxPoolDropoutOp) and fused[1].name == "p+d"
    # anything but a 2x2 / 2 'valid' max window, or a dropout that drops nothing, stays apart
    for other in (pool("avg"), pool(size=(3, 3), strides=(3, 3)), pool(strides=(1, 1)),
                  pool(padding="same")):
        assert kinds([conv, other, DropoutOp("d", 0.25)]) == ["Conv2DOp", "Pooling2DOp",
                                                              "DropoutOp"]
    assert kinds([conv, pool(), DropoutOp("d", 0.0)]) == ["Conv2DOp", "Pooling2DOp", "DropoutOp"]
    assert kinds([conv, DropoutOp("d", 0.25), pool()]) == ["Conv2DOp", "DropoutOp", "Pooling2DOp"]
