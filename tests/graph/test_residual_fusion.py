"""Inference plans fold a residual add into the convolution before it (a sum post-op that
writes over the other input), only where nothing else reads that input afterwards."""

import numpy as np
import pytest

from kiln import keras
from kiln.graph import rules as graph_rules
from kiln.graph.rewrite import fuse
from kiln.keras import layers
from kiln.ops.conv2d_residual import Conv2DResidualOp


def inference_ops(model):
    return fuse(model.graph, model._plan_rules, "inference").ops


def predictions(model, x, residual_fusion):
    original = model._plan_rules
    if not residual_fusion:
        model._plan_rules = graph_rules.without("residual add into conv", rules=original)
    model._plans = {}
    try:
        result = model.predict(x, batch_size=8)
    finally:
        model._plan_rules = original
        model._plans = {}
    return result if isinstance(result, list) else [result]


def randomize_batch_norms(model):
    rng = np.random.default_rng(5)
    for weight in model.weights:
        low, high = (0.5, 1.5) if weight.path.endswith(("gamma", "variance")) else (-0.5, 0.5)
        if "batch_normalization" in weight.path:
            weight.assign(rng.uniform(low, high, weight.shape))


def build(case, data_format="channels_last"):
    keras.backend.clear_session()
    keras.initializers.set_random_seed(3)
    shape = (8, 8, 4) if data_format == "channels_last" else (4, 8, 8)
    axis = -1 if data_format == "channels_last" else 1
    f = dict(padding="same", data_format=data_format)
    inputs = keras.Input(shape)
    h = layers.Conv2D(4, 3, activation="relu", **f)(inputs)
    if case == "block":  # the ResNet v1 block: relu(h + bn(conv(relu(bn(conv(h))))))
        inner = layers.Conv2D(4, 3, **f)(h)
        inner = layers.Activation("relu")(layers.BatchNormalization(axis=axis)(inner))
        branch = layers.BatchNormalization(axis=axis)(layers.Conv2D(4, 3, **f)(inner))
        outputs = layers.Activation("relu")(layers.add([h, branch]))
    elif case == "projection":  # relu(conv1x1(h) + conv(h)): both branches are convs
        outputs = layers.Activation("relu")(layers.add(
            [layers.Conv2D(4, 1, **f)(h), layers.Conv2D(4, 3, **f)(h)]))
    elif case == "input residual":  # the model's input is the user's buffer: never written
        outputs = layers.add([inputs, layers.Conv2D(4, 3, **f)(inputs)])
    elif case == "read later":  # h is read again after the add
        added = layers.add([h, layers.Conv2D(4, 3, **f)(h)])
        outputs = layers.concatenate([added, h], axis=axis)
    elif case == "read by the conv":  # the folded conv itself reads h: it cannot overwrite it
        outputs = layers.add([h, layers.Conv2D(4, 3, **f)(h)])
    elif case == "model output":  # h is an output too
        outputs = [layers.add([h, layers.Conv2D(4, 3, **f)(h)]), h]
    else:
        raise AssertionError(case)
    model = keras.Model(inputs, outputs)
    randomize_batch_norms(model)
    return model, shape


@pytest.mark.parametrize("case,folded", [
    ("block", 1), ("projection", 1), ("input residual", 0), ("read later", 0),
    ("model output", 0), ("read by the conv", 0)])
@pytest.mark.parametrize("data_format", ["channels_last", "channels_first"])
def test_residual_add_folds_only_where_its_input_may_be_overwritten(case, folded, data_format):
    model, shape = build(case, data_format)
    fused = [op for op in inference_ops(model) if isinstance(op, Conv2DResidualOp)]
    assert len(fused) == folded
    x = np.random.default_rng(0).normal(size=(16, *shape)).astype(np.float32)
    with_fusion = predictions(model, x, residual_fusion=True)
    without = predictions(model, x, residual_fusion=False)
    for a, b in zip(with_fusion, without, strict=True):
        assert np.abs(b).max() > 0.1  # the outputs are not trivially zero
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)


def test_the_block_folds_batch_norm_add_and_relu_into_one_convolution():
    model, _ = build("block")
    ops = inference_ops(model)
    assert [type(op).__name__ for op in ops] == ["Conv2DOp", "Conv2DOp", "Conv2DResidualOp"]
    assert ops[2].activation == "relu" and ops[2].conv.channel_affine is not None
    # training keeps the add: its backward hands the gradient to both branches
    assert "AddOp" in [type(op).__name__ for op in fuse(model.graph, model._plan_rules).ops]



def test_a_bottleneck_block_adds_its_residual_inside_the_convolution():
    """ResNet50's bottleneck end: a 1x1 conv, its folded batch norm (binary post-ops), the
    residual add and the relu run as one convolution with a jit kernel: oneDNN has only its
    reference kernel for binary post-ops followed by a sum on AVX-512, so the residual comes
    in as a binary add post-op there, never as a separate add."""
    keras.backend.clear_session()
    keras.initializers.set_random_seed(4)
    inputs = keras.Input((7, 7, 64))
    h = layers.Conv2D(64, 1, activation="relu")(inputs)
    branch = layers.Activation("relu")(layers.BatchNormalization()(layers.Conv2D(32, 1)(h)))
    branch = layers.BatchNormalization()(layers.Conv2D(64, 1)(branch))
    model = keras.Model(inputs, layers.Activation("relu")(layers.add([h, branch])))
    randomize_batch_norms(model)
    x = np.random.default_rng(1).normal(size=(16, 7, 7, 64)).astype(np.float32)
    without = predictions(model, x, residual_fusion=False)[0]
    model._plans = {}
    with_fusion = model.predict(x, batch_size=16)
    calls = model._plans[(False, 16)].calls
    assert not [call.label for call in calls if "residual add" in call.label]
    for call in calls:
        primitive = getattr(call, "primitive", None)
        if primitive is not None and "forward" in call.label:
            assert not primitive.pd.implementation.startswith("ref"), call.label
    assert np.abs(without).max() > 0.1
    np.testing.assert_allclose(with_fusion, without, rtol=1e-5, atol=1e-5)
