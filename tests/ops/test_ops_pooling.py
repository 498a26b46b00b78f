"""kiln.ops.pooling.Pooling2DOp (max with workspace argmax, average excluding padding)."""

import numpy as np
import pytest
from op_checker import CHANNELS_FIRST, CHANNELS_LAST, OpHarness, check_op, pool2d_reference, run_ops

from kiln.ops.conv2d import Conv2DOp
from kiln.ops.pooling import Pooling2DOp

FORMATS = [CHANNELS_LAST, CHANNELS_FIRST]

# name -> (input H, W), pool_size, strides, padding
CASES = {
    "2x2-s2-valid": ((6, 8), (2, 2), (2, 2), "valid"),
    "2x2-s2-valid-odd-input": ((7, 9), (2, 2), (2, 2), "valid"),
    "2x2-s2-same-odd-input": ((7, 9), (2, 2), (2, 2), "same"),
    "3x3-s2-same": ((7, 8), (3, 3), (2, 2), "same"),
    "3x3-s2-valid": ((7, 9), (3, 3), (2, 2), "valid"),
    "3x3-s1-same": ((5, 6), (3, 3), (1, 1), "same"),
}


def distinct_input(shape, data_format, seed):
    """Values with no ties and gaps of 0.01, so max pooling has one argmax per window and
    a 1e-3 perturbation never changes it."""
    rng = np.random.default_rng(seed)
    x = (rng.permutation(int(np.prod(shape))).reshape(shape) * 0.01 - 1.0).astype(np.float32)
    if data_format == CHANNELS_FIRST:
        x = np.ascontiguousarray(x.transpose(0, 3, 1, 2))
    return x, rng


def run_pool(mode, case, data_format, channels=3, seed=0, **kw):
    (h, w), pool_size, strides, padding = CASES[case]
    x, rng = distinct_input((2, h, w, channels), data_format, seed)
    op = Pooling2DOp("pool", mode, pool_size, strides, padding)
    y = pool2d_reference(x.astype(np.float64), mode, pool_size, strides, padding, data_format)
    dy = rng.normal(size=y.shape).astype(np.float32)

    def reference(x64, p64):
        return pool2d_reference(x64, mode, pool_size, strides, padding, data_format)

    def reference_grads(x64, p64, dy64):
        return pool2d_reference(x64, mode, pool_size, strides, padding, data_format, dy64)[1], {}

    return check_op(op, x, {}, dy, reference, data_format, reference_grads, rtol=1e-5,
                    atol=1e-6, grad_rtol=1e-5, grad_atol=1e-5, eps=1e-3, entries=6, **kw)


@pytest.mark.parametrize("data_format", FORMATS)
@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("mode", ["max", "avg"])
def test_pooling(mode, case, data_format):
    result, harness = run_pool(mode, case, data_format)
    if mode == "max":
        # the forward_training max pooling keeps a workspace and backward reads it
        forward_args = [call.args for call in harness.builder.forward_calls
                        if call.label == "pool forward"][0]
        backward_args = [call.args for call in harness.builder.backward_calls
                         if call.label == "pool backward"][0]
        from kiln.binding import constants as dnnl
        assert forward_args[dnnl.ARG_WORKSPACE] is backward_args[dnnl.ARG_WORKSPACE]


@pytest.mark.parametrize("data_format", FORMATS)
def test_max_pool_gradient_routes_to_argmax_with_overlapping_windows(data_format):
    """3x3 stride 2 'same': windows overlap, so an input that is the max of several windows
    receives the sum of their gradients; every other input receives exactly zero."""
    x, _ = distinct_input((1, 5, 5, 2), data_format, seed=1)
    op = Pooling2DOp("pool", "max", (3, 3), (2, 2), "same")
    y = pool2d_reference(x.astype(np.float64), "max", (3, 3), (2, 2), "same", data_format)
    dy = np.ones_like(y, dtype=np.float32)
    result, _ = run_ops(op, x, {}, dy, data_format)
    np.testing.assert_array_equal(result.output, y.astype(np.float32))
    # how many windows pick each input as their maximum
    _, counts = pool2d_reference(x.astype(np.float64), "max", (3, 3), (2, 2), "same",
                                 data_format, dy=np.ones_like(y))
    np.testing.assert_array_equal(result.input_grad, counts.astype(np.float32))
    assert counts.max() > 1  # some input really is shared by several windows
    assert result.input_grad.sum() == y.size
    # a global maximum at (row 1, col 1) lies in the 2 x 2 windows starting at rows and
    # columns -1 and 1 (padding (1, 1)): it collects the gradient of all four
    x2 = np.random.default_rng(2).uniform(-1, 0, size=x.shape).astype(np.float32)
    index = (0, 1, 1, 0) if data_format == CHANNELS_LAST else (0, 0, 1, 1)
    x2[index] = 5.0
    harness = OpHarness(op, x2, data_format=data_format)
    harness.forward()
    grad, _ = harness.backward(np.ones_like(y))
    assert grad[index] == 4.0
    channel0 = grad[..., 0] if data_format == CHANNELS_LAST else grad[:, 0]
    assert channel0.sum() == 9.0  # 3 x 3 windows of channel 0, each routes 1


def test_max_pool_backward_uses_this_steps_workspace():
    """The workspace is refreshed by every forward: a second step with another input routes
    the gradient to the new argmax positions."""
    op = Pooling2DOp("pool", "max", (2, 2), (2, 2))
    x1 = np.array([[[[1.0], [0.0]], [[0.0], [0.0]]]], np.float32)  # max at (0, 0)
    x2 = np.array([[[[0.0], [0.0]], [[0.0], [1.0]]]], np.float32)  # max at (1, 1)
    harness = OpHarness(op, x1)
    dy = np.array([[[[3.0]]]], np.float32)
    grad1 = harness.run(x1, dy).input_grad
    grad2 = harness.run(x2, dy).input_grad
    np.testing.assert_array_equal(grad1[0, :, :, 0], [[3.0, 0.0], [0.0, 0.0]])
    np.testing.assert_array_equal(grad2[0, :, :, 0], [[0.0, 0.0], [0.0, 3.0]])


def test_avg_pool_same_excludes_padding():
    """Keras/TensorFlow 'same' average pooling divides by the number of real inputs."""
    x = np.ones((1, 3, 3, 1), np.float32)
    result, _ = run_ops(Pooling2DOp("pool", "avg", (2, 2), (2, 2), "same"), x, {},
                        np.ones((1, 2, 2, 1), np.float32))
    np.testing.assert_allclose(result.output, 1.0)
    # corner input (2, 2) alone in its window: it gets the whole gradient
    assert result.input_grad[0, 2, 2, 0] == pytest.approx(1.0)
    assert result.input_grad[0, 0, 0, 0] == pytest.approx(0.25)


@pytest.mark.parametrize("activation", ["tanh", "relu", "sigmoid"])
@pytest.mark.parametrize("data_format", FORMATS)
def test_pooling_after_conv_in_blocked_layout(data_format, activation):
    """Pooling runs in whatever (possibly blocked) layout the conv produced, and applies the
    conv's activation derivative to the pooled gradient (the conv then skips its own)."""
    rng = np.random.default_rng(3)
    shape = (2, 8, 8, 16) if data_format == CHANNELS_LAST else (2, 16, 8, 8)
    x = rng.normal(size=shape).astype(np.float32)
    kernel = rng.normal(0, 0.2, size=(3, 3, 16, 16)).astype(np.float32)
    bias = rng.normal(0, 0.1, size=16).astype(np.float32)
    ops = [Conv2DOp("conv", 16, (3, 3), padding="same", activation=activation),
           Pooling2DOp("pool", "max", (2, 2), (2, 2))]
    from op_checker import conv2d_reference

    def reference(x64, p64):
        y = conv2d_reference(x64, p64["conv/kernel"], p64["conv/bias"], (1, 1), "same",
                             activation, data_format)
        return pool2d_reference(y, "max", (2, 2), (2, 2), "valid", data_format)

    dy = rng.normal(size=reference(x.astype(np.float64), {"conv/kernel": kernel.astype(
        np.float64), "conv/bias": bias.astype(np.float64)}).shape).astype(np.float32)
    _, harness = check_op(ops, x, {"conv/kernel": kernel, "conv/bias": bias}, dy, reference,
                          data_format, rtol=1e-4, atol=1e-5, eps=1e-2, entries=8)
    labels = [call.label for call in harness.builder.backward_calls]
    assert f"pool {activation} backward" in labels
    assert f"conv {activation} backward" not in labels


def test_first_layer_pooling_has_no_input_gradient():
    x, _ = distinct_input((1, 4, 4, 1), CHANNELS_LAST, seed=4)
    result, harness = run_ops(Pooling2DOp("pool", "max", (2, 2), (2, 2)), x, {},
                              np.ones((1, 2, 2, 1), np.float32), need_input_grad=False)
    assert result.input_grad is None
    assert harness.builder.backward_calls == []


def test_pool_larger_than_input_is_rejected():
    with pytest.raises(ValueError, match="smaller than pool_size"):
        Pooling2DOp("pool", "max", (3, 3), (1, 1)).output_dims((1, 1, 2, 5))


@pytest.mark.parametrize("mode", ["max", "avg"])
def test_pooling_inference_builder_has_no_workspace(mode):
    from kiln.binding import constants as dnnl
    x, _ = distinct_input((2, 7, 8, 3), CHANNELS_LAST, seed=5)
    harness = OpHarness(Pooling2DOp("pool", mode, (3, 3), (2, 2), "same"), x, training=False)
    expected = pool2d_reference(x.astype(np.float64), mode, (3, 3), (2, 2), "same")
    np.testing.assert_allclose(harness.forward(), expected, rtol=1e-6, atol=1e-6)
    (call,) = harness.builder.forward_calls
    assert dnnl.ARG_WORKSPACE not in call.args
