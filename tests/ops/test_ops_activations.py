"""Every Keras activation of kiln.ops.eltwise's table, standalone and fused into a conv /
dense, against float64 numpy (Keras 3's formulas) and central differences. Activations with
arguments are the values activation_name makes (they read as "relu(max_value=6.0)")."""

import math

import numpy as np
import pytest
from op_checker import CHANNELS_FIRST, CHANNELS_LAST, OpHarness, check_op, conv2d_reference

from kiln.ops.activation import ActivationOp
from kiln.ops.conv2d import Conv2DOp
from kiln.ops.dense import DenseOp
from kiln.ops.eltwise import FUSABLE, activation_name, spec

SELU_ALPHA, SELU_SCALE = 1.6732632423543772848170429916717, 1.0507009873554804934193349852946
erf = np.vectorize(math.erf)


def sigmoid(z):
    return 1.0 / (1.0 + np.exp(-z))


def keras_relu(z, negative_slope=0.0, max_value=None, threshold=0.0):
    """keras.activations.relu, step by step as Keras 3 computes it."""
    y = np.where(z > threshold, z, 0.0)
    if max_value is not None:
        y = np.clip(y, 0.0, max_value)
    return y - negative_slope * np.maximum(threshold - z, 0.0)


REFERENCES = {
    "relu": lambda z: np.maximum(z, 0),
    "relu6": lambda z: np.clip(z, 0, 6),
    "leaky_relu": lambda z: np.where(z > 0, z, 0.2 * z),
    "elu": lambda z: np.where(z > 0, z, np.expm1(z)),
    "selu": lambda z: SELU_SCALE * np.where(z > 0, z, SELU_ALPHA * np.expm1(z)),
    "gelu": lambda z: 0.5 * z * (1 + erf(z / np.sqrt(2))),
    activation_name("gelu", approximate=True): lambda z: 0.5 * z * (1 + np.tanh(
        np.sqrt(2 / np.pi) * (z + 0.044715 * z ** 3))),
    "silu": lambda z: z * sigmoid(z),
    "hard_sigmoid": lambda z: np.clip(z + 3, 0, 6) / 6,
    "hard_silu": lambda z: z * np.clip(z + 3, 0, 6) / 6,
    "softplus": lambda z: np.log1p(np.exp(z)),
    "softsign": lambda z: z / (1 + np.abs(z)),
    "exponential": np.exp,
    "mish": lambda z: z * np.tanh(np.log1p(np.exp(z))),
    "tanh": np.tanh,
    "sigmoid": sigmoid,
    activation_name("relu", max_value=6.0): lambda z: keras_relu(z, max_value=6.0),
    activation_name("relu", max_value=1.5): lambda z: keras_relu(z, max_value=1.5),
    activation_name("relu", negative_slope=0.1): lambda z: keras_relu(z, negative_slope=0.1),
    activation_name("relu", threshold=0.5): lambda z: keras_relu(z, threshold=0.5),
    activation_name("relu", max_value=2.0, negative_slope=0.1, threshold=0.5):
        lambda z: keras_relu(z, 0.1, 2.0, 0.5),
    activation_name("leaky_relu", negative_slope=0.3): lambda z: np.where(z > 0, z, 0.3 * z),
    activation_name("elu", alpha=0.5): lambda z: np.where(z > 0, z, 0.5 * np.expm1(z)),
    "swish": lambda z: z * sigmoid(z),
}


def kinks(name):
    """Points where the activation is not differentiable (central differences skip them)."""
    return {"relu6": (0, 6), "hard_sigmoid": (-3, 3), "hard_silu": (-3, 3)}.get(name, (0,))


def away_from_kinks(x, name, margin=0.05):
    for kink in (0.0, 0.5, 1.5, 2.0, 6.0, -3.0, 3.0):
        near = np.abs(x - kink) < margin
        x = np.where(near, kink + margin * np.sign(x - kink + 1e-9) * 2, x)
    return x.astype(np.float32)


def numeric_derivative(name, z, eps=1e-6):
    f = REFERENCES[name]
    return (f(z + eps) - f(z - eps)) / (2 * eps)


@pytest.mark.parametrize("shape,data_format", [
    ((4, 7), CHANNELS_LAST), ((2, 3, 4, 5), CHANNELS_LAST), ((2, 5, 3, 4), CHANNELS_FIRST)],
    ids=["2d", "4d-channels_last", "4d-channels_first"])
@pytest.mark.parametrize("name", list(REFERENCES))
def test_activation_matches_keras_formula(name, shape, data_format):
    rng = np.random.default_rng(3)
    x = away_from_kinks(rng.normal(0, 2.5, size=shape), name)
    dy = rng.normal(size=shape).astype(np.float32)

    def reference(x64, p64):
        return REFERENCES[name](x64)

    def reference_grads(x64, p64, dy64):
        return dy64 * numeric_derivative(name, x64), {}

    check_op(ActivationOp("act", name), x, {}, dy, reference, data_format, reference_grads,
             rtol=2e-5, atol=2e-6, grad_rtol=1e-4, grad_atol=1e-4, eps=1e-3, entries=8)


def test_names_and_aliases():
    assert activation_name("relu", max_value=6) == "relu(max_value=6.0)"
    assert activation_name("relu", negative_slope=0.0, max_value=None, threshold=0.0) == "relu"
    assert activation_name("swish") == "silu" and activation_name("hard_swish") == "hard_silu"
    assert activation_name("gelu", approximate=True) == "gelu(approximate=True)"
    assert activation_name("leaky_relu", negative_slope=0.2) == "leaky_relu"


def test_which_activations_fuse():
    """Fused only where the backward reads the output, the one thing a fused primitive keeps."""
    fused = {"relu", "relu6", "leaky_relu", "elu", "selu", "tanh", "sigmoid", "exponential",
             "hard_sigmoid", "softplus", activation_name("relu", max_value=6.0),
             activation_name("leaky_relu", negative_slope=0.3)}
    unfused = {"gelu", activation_name("gelu", approximate=True), "silu", "swish", "mish",
               "hard_silu", "softsign", activation_name("relu", threshold=0.5),
               activation_name("elu", alpha=-0.5), "softmax", "linear"}
    assert all(name in FUSABLE for name in fused)
    assert not any(name in FUSABLE for name in unfused)
    assert spec("gelu").reads == "src" and spec("relu6").reads == "dst"


FUSED = ["relu6", "leaky_relu", "elu", "selu", "exponential", "hard_sigmoid", "softplus",
         activation_name("relu", max_value=1.5)]


@pytest.mark.parametrize("data_format", [CHANNELS_LAST, CHANNELS_FIRST])
@pytest.mark.parametrize("name", FUSED)
def test_activation_fused_into_conv(name, data_format):
    """The forward runs as post-ops of the convolution, the backward from its saved output."""
    rng = np.random.default_rng(5)
    shape = (2, 6, 6, 3) if data_format == CHANNELS_LAST else (2, 3, 6, 6)
    x = rng.normal(size=shape).astype(np.float32)
    kernel = rng.normal(0, 0.4, size=(3, 3, 3, 4)).astype(np.float32)
    bias = rng.normal(0, 0.1, size=4).astype(np.float32)
    if name == "exponential":
        kernel *= 0.3

    def reference(x64, p64):
        z = conv2d_reference(x64, p64["conv/kernel"], p64["conv/bias"], (1, 1), "same", None,
                             data_format)
        return REFERENCES[name](z)

    params = {"conv/kernel": kernel, "conv/bias": bias}
    out = reference(x.astype(np.float64), {k: v.astype(np.float64) for k, v in params.items()})
    dy = rng.normal(size=out.shape).astype(np.float32)
    _, harness = check_op(Conv2DOp("conv", 4, (3, 3), padding="same", activation=name), x, params,
                          dy, reference, data_format, rtol=1e-4, atol=1e-5, eps=1e-2,
                          entries=8, min_checked=0.3)
    # the activation is a post-op: no call of its own forward
    assert not any(name in call.label for call in harness.builder.forward_calls)
    assert any(name in call.label for call in harness.builder.backward_calls)


@pytest.mark.parametrize("name", ["selu", "softplus", "relu6"])
def test_activation_fused_into_dense(name):
    rng = np.random.default_rng(6)
    x = rng.normal(size=(5, 7)).astype(np.float32)
    kernel = rng.normal(0, 0.5, size=(7, 4)).astype(np.float32)
    bias = rng.normal(0, 0.1, size=4).astype(np.float32)

    def reference(x64, p64):
        return REFERENCES[name](x64 @ p64["dense/kernel"] + p64["dense/bias"])

    dy = rng.normal(size=(5, 4)).astype(np.float32)
    check_op(DenseOp("dense", 4, activation=name), x, {"dense/kernel": kernel, "dense/bias": bias},
             dy, reference, rtol=1e-4, atol=1e-5, eps=1e-2, entries=8)


@pytest.mark.parametrize("name", ["gelu", "softsign", "selu",
                                  activation_name("relu", threshold=0.5)])
def test_inference_plan_has_no_backward(name):
    x = np.random.default_rng(7).normal(size=(3, 8)).astype(np.float32)
    harness = OpHarness(ActivationOp("a", name), x, training=False)
    np.testing.assert_allclose(harness.forward(), REFERENCES[name](x.astype(np.float64)),
                               rtol=2e-5, atol=2e-6)
    assert harness.builder.backward_calls == []


def test_unknown_names_are_rejected():
    for bad in ("sparsemax", "relu(bogus=1)", "gelu(approximate=maybe)"):
        with pytest.raises(ValueError, match="activation must be one of"):
            ActivationOp("a", bad)
