"""kiln.ops.activation.ActivationOp (relu, tanh, sigmoid, linear, softmax) vs numpy."""

import numpy as np
import pytest
from op_checker import (
    CHANNELS_FIRST,
    CHANNELS_LAST,
    OpHarness,
    activation_backward,
    activation_forward,
    check_op,
    run_ops,
)

from kiln.ops.activation import ActivationOp

ELEMENTWISE = ["relu", "tanh", "sigmoid", "linear", None]


def keras_activation(name, x, data_format):
    """Keras applies every activation on the Keras-layout array; softmax on the last axis."""
    return activation_forward(name, x)


@pytest.mark.parametrize("shape,data_format", [
    ((4, 7), CHANNELS_LAST), ((2, 5, 6, 3), CHANNELS_LAST), ((2, 3, 5, 6), CHANNELS_FIRST)],
    ids=["2d", "4d-channels_last", "4d-channels_first"])
@pytest.mark.parametrize("activation", ELEMENTWISE + ["softmax"])
def test_activation_forward_backward(activation, shape, data_format):
    rng = np.random.default_rng(11)
    x = rng.normal(size=shape).astype(np.float32)
    dy = rng.normal(size=shape).astype(np.float32)

    def reference(x64, p64):
        return activation_forward(activation, x64)

    def reference_grads(x64, p64, dy64):
        return activation_backward(activation, activation_forward(activation, x64), dy64), {}

    result, harness = check_op(ActivationOp("act", activation), x, {}, dy, reference, data_format,
                               reference_grads, rtol=1e-5, atol=1e-6, grad_rtol=1e-4,
                               grad_atol=1e-5, eps=1e-3, entries=6)
    if activation in (None, "linear"):
        # identity: no primitive at all, the gradient passes straight through
        assert harness.builder.forward_calls == [] and harness.builder.backward_calls == []


def test_softmax_rows_sum_to_one_and_axis_is_keras_last_axis():
    rng = np.random.default_rng(12)
    x = rng.normal(size=(2, 3, 4, 5)).astype(np.float32)  # channels_first: softmax over W (5)
    out, _ = run_ops(ActivationOp("s", "softmax"), x, {}, np.zeros_like(x), CHANNELS_FIRST)
    np.testing.assert_allclose(out.output.sum(axis=-1), 1.0, rtol=1e-5)
    assert not np.allclose(out.output.sum(axis=1), 1.0)
    x = rng.normal(size=(2, 4, 5, 3)).astype(np.float32)  # channels_last: softmax over C (3)
    out, _ = run_ops(ActivationOp("s", "softmax"), x, {}, np.zeros_like(x), CHANNELS_LAST)
    np.testing.assert_allclose(out.output.sum(axis=-1), 1.0, rtol=1e-5)


def test_softmax_backward_of_constant_gradient_is_zero():
    """sum(softmax) == 1, so a gradient equal on every class gives zero input gradient."""
    x = np.random.default_rng(13).normal(size=(5, 6)).astype(np.float32)
    dy = np.tile(np.arange(5, dtype=np.float32)[:, None], (1, 6))
    result, _ = run_ops(ActivationOp("s", "softmax"), x, {}, dy)
    np.testing.assert_allclose(result.input_grad, 0.0, atol=1e-6)


def test_softmax_is_shift_invariant_and_stable_for_large_logits():
    x = np.array([[1000.0, 1001.0, 1002.0], [-1000.0, -1000.0, -1000.0]], np.float32)
    result, _ = run_ops(ActivationOp("s", "softmax"), x, {}, np.zeros_like(x))
    expected = activation_forward("softmax", x.astype(np.float64))
    np.testing.assert_allclose(result.output, expected, rtol=1e-5)
    assert np.all(np.isfinite(result.output))


@pytest.mark.parametrize("activation", ["relu", "tanh", "sigmoid", "softmax"])
def test_activation_inference_builder(activation):
    rng = np.random.default_rng(14)
    x = rng.normal(size=(3, 8)).astype(np.float32)
    harness = OpHarness(ActivationOp("a", activation), x, training=False)
    np.testing.assert_allclose(harness.forward(), activation_forward(activation, x), rtol=1e-5,
                               atol=1e-6)
    assert harness.builder.backward_calls == []


def test_activation_relu_gradient_masks_negative_inputs():
    x = np.array([[-2.0, -0.5, 0.5, 2.0]], np.float32)
    dy = np.array([[1.0, 2.0, 3.0, 4.0]], np.float32)
    result, _ = run_ops(ActivationOp("r", "relu"), x, {}, dy)
    np.testing.assert_array_equal(result.output, [[0.0, 0.0, 0.5, 2.0]])
    np.testing.assert_array_equal(result.input_grad, [[0.0, 0.0, 3.0, 4.0]])


def test_unknown_activation_is_rejected():
    with pytest.raises(ValueError, match="activation must be one of"):
        ActivationOp("a", "sparsemax")


def test_softmax_after_flatten_runs_on_the_feature_matrix():
    """A softmax over a Flatten of a 4D tensor (MobileNetV3's top): over the (N, H*W*C)
    features in Keras's order, the gradient back through the same reorder."""
    from kiln.ops.flatten import FlattenOp
    rng = np.random.default_rng(5)
    x = rng.normal(size=(2, 3, 4, 5)).astype(np.float32)
    dy = rng.normal(size=(2, 60)).astype(np.float32)
    result, _ = run_ops([FlattenOp("f"), ActivationOp("s", "softmax")], x, {}, dy)
    probabilities = activation_forward("softmax", x.reshape(2, 60).astype(np.float64))
    np.testing.assert_allclose(result.output, probabilities, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(
        result.input_grad,
        activation_backward("softmax", probabilities, dy.astype(np.float64)).reshape(x.shape),
        rtol=1e-4, atol=1e-7)
