"""The convolution family against float64 numpy and central differences: Conv2DOp with
dilation_rate and groups, depthwise (groups = channels, with a depth multiplier), and
Conv2DTransposeOp (strides, same / valid, output_padding, dilation), in both data formats.
Depthwise weight gradients oneDNN has no depthwise kernel for (not 3x3) are
depthwise_weights' numba kernel."""

import numpy as np
import pytest
from conv_family_reference import (
    conv2d_transpose_reference,
    depthwise_conv2d_reference,
    depthwise_kernel_as_grouped,
    grouped_conv2d_reference,
)
from op_checker import CHANNELS_FIRST, CHANNELS_LAST, OpHarness, check_op

from kiln.binding import constants as dnnl
from kiln.ops.conv2d import Conv2DOp
from kiln.ops.conv2d_transpose import Conv2DTransposeOp
from kiln.ops.depthwise_weights import depthwise_weights_kernel

FORMATS = [CHANNELS_LAST, CHANNELS_FIRST]


def _case(shape, kernel_shape, filters, data_format, use_bias, seed):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(2, *shape)).astype(np.float32)
    if data_format == CHANNELS_FIRST:
        x = np.ascontiguousarray(x.transpose(0, 3, 1, 2))
    params = {"conv/kernel": rng.normal(0, 0.4, size=kernel_shape).astype(np.float32)}
    if use_bias:
        params["conv/bias"] = rng.normal(0, 0.3, size=filters).astype(np.float32)
    return x, params, rng


def _check(op, x, params, rng, data_format, reference, use_bias):
    """check_op with the reference's own gradients; returns the harness."""
    out_dims = op.output_dims(x.shape if data_format == CHANNELS_FIRST
                              else (x.shape[0], x.shape[3], x.shape[1], x.shape[2]))
    n, c, h, w = out_dims
    dy = rng.normal(size=(n, h, w, c) if data_format == CHANNELS_LAST else out_dims)

    def forward(x64, p64):
        return reference(x64, p64["conv/kernel"], p64.get("conv/bias"))

    def grads(x64, p64, dy64):
        _, dx, dk, db = reference(x64, p64["conv/kernel"], p64.get("conv/bias"), dy=dy64)
        return dx, {"conv/kernel": dk, **({"conv/bias": db} if use_bias else {})}

    _, harness = check_op(op, x, params, dy.astype(np.float32), forward, data_format, grads,
                          rtol=1e-4, atol=1e-4, grad_rtol=1e-4, grad_atol=2e-4, entries=4)
    return harness


# (input H, W, C), filters, kernel, strides, padding, dilation, groups, activation
CONVS = {
    "dilated-2-same": ((9, 8, 3), 4, (3, 3), (1, 1), "same", (2, 2), 1, "relu"),
    "dilated-2x3-valid": ((10, 11, 2), 3, (3, 2), (1, 1), "valid", (2, 3), 1, None),
    "groups-2-same-s2": ((7, 8, 4), 6, (3, 3), (2, 2), "same", (1, 1), 2, "tanh"),
    "groups-4-blocked": ((6, 6, 16), 32, (3, 3), (1, 1), "same", (1, 1), 4, None),
    "groups-3-dilated": ((9, 9, 6), 9, (2, 2), (1, 1), "valid", (2, 2), 3, "sigmoid"),
    # 1x1 strided (ResNet's projection shortcuts): oneDNN's jit_1x1 kernels with a stride
    "1x1-s2-valid": ((8, 8, 4), 8, (1, 1), (2, 2), "valid", (1, 1), 1, None),
    "1x1-s2-valid-blocked": ((8, 8, 16), 32, (1, 1), (2, 2), "valid", (1, 1), 1, None),
    "1x1-s3-valid-rows-left-over": ((7, 8, 2), 3, (1, 1), (3, 3), "valid", (1, 1), 1, None),
    "1x1-s2-same-odd": ((7, 7, 16), 16, (1, 1), (2, 2), "same", (1, 1), 1, None),
}


@pytest.mark.parametrize("data_format", FORMATS)
@pytest.mark.parametrize("case", list(CONVS))
def test_dilated_and_grouped_conv2d(case, data_format):
    shape, filters, kernel, strides, padding, dilation, groups, activation = CONVS[case]
    x, params, rng = _case(shape, (*kernel, shape[2] // groups, filters), filters, data_format,
                           True, seed=len(case))
    op = Conv2DOp("conv", filters, kernel, strides, padding, activation, True, dilation, groups)

    def reference(x64, k, b, dy=None):
        return grouped_conv2d_reference(x64, k, b, strides, padding, dilation, groups,
                                        activation, data_format, dy=dy)

    _check(op, x, params, rng, data_format, reference, True)


# (input H, W, C), depth multiplier, kernel, strides, padding, dilation, use_bias, activation
DEPTHWISE = {
    "3x3-same-s1": ((8, 7, 16), 1, (3, 3), (1, 1), "same", (1, 1), True, "relu"),
    "3x3-same-s2": ((9, 8, 32), 1, (3, 3), (2, 2), "same", (1, 1), False, None),
    "5x3-valid-multiplier-2": ((9, 8, 3), 2, (5, 3), (1, 1), "valid", (1, 1), True, "tanh"),
    "3x3-dilated-2": ((9, 9, 8), 1, (3, 3), (1, 1), "same", (2, 2), True, None),
    # 5x5 (EfficientNet's): oneDNN's depthwise backward-weights takes undilated 3x3 only, so
    # the weight gradient is depthwise_weights' numba kernel (24 channels: a padded block)
    "5x5-same-s1": ((8, 7, 24), 1, (5, 5), (1, 1), "same", (1, 1), True, "relu"),
    "5x5-same-s2": ((11, 10, 16), 1, (5, 5), (2, 2), "same", (1, 1), False, None),
    "5x5-valid-dilated-2": ((12, 11, 8), 1, (5, 5), (1, 1), "valid", (2, 2), True, None),
    "7x5-same-s2-3-channels": ((9, 9, 3), 1, (7, 5), (2, 2), "same", (1, 1), True, None),
}
NUMBA_WEIGHTS = {"3x3-dilated-2", "5x5-same-s1", "5x5-same-s2", "5x5-valid-dilated-2",
                 "7x5-same-s2-3-channels"}


@pytest.mark.parametrize("data_format", FORMATS)
@pytest.mark.parametrize("case", list(DEPTHWISE))
def test_depthwise_conv2d(case, data_format):
    """Depthwise = groups of one input channel; the Keras (kh, kw, in, m) kernel as is."""
    shape, multiplier, kernel, strides, padding, dilation, use_bias, activation = DEPTHWISE[case]
    channels = shape[2]
    filters = channels * multiplier
    x, params, rng = _case(shape, (*kernel, channels, multiplier), filters, data_format,
                           use_bias, seed=len(case) + 1)
    op = Conv2DOp("conv", filters, kernel, strides, padding, activation, use_bias, dilation,
                  groups=channels)
    assert op.parameter_dims((2, channels, *shape[:2]))["kernel"] == (
        (channels, multiplier, 1, *kernel), dnnl.decab)

    def reference(x64, k, b, dy=None):
        return depthwise_conv2d_reference(x64, k, b, strides, padding, dilation, activation,
                                          data_format, dy=dy)

    harness = _check(op, x, params, rng, data_format, reference, use_bias)
    weights_kernels = [call for call in harness.backward_calls
                       if getattr(call, "function", None) is depthwise_weights_kernel]
    assert len(weights_kernels) == (case in NUMBA_WEIGHTS)
    # oneDNN's depthwise kernels, not its reference implementation
    for call in harness.forward_calls + harness.backward_calls:
        if "reorder" not in call.label and "to layout" not in call.label \
                and call not in weights_kernels:
            assert not call.primitive.pd.implementation.startswith("ref"), (
                call.label, call.primitive.pd.implementation)


def test_depthwise_kernel_order_is_keras():
    """Output channel c * m + k reads input channel c with kernel[..., c, k] (Keras's order):
    a one-hot kernel moves exactly one input channel to one output channel."""
    kernel = np.zeros((1, 1, 3, 2))
    kernel[0, 0, 1, 1] = 1.0
    x = np.arange(2 * 2 * 2 * 3, dtype=np.float64).reshape(2, 2, 2, 3)
    y = depthwise_conv2d_reference(x, kernel)
    assert depthwise_kernel_as_grouped(kernel).shape == (1, 1, 1, 6)
    np.testing.assert_array_equal(y[..., 3], x[..., 1])
    assert np.count_nonzero(y[..., [0, 1, 2, 4, 5]]) == 0
    harness = OpHarness(Conv2DOp("conv", 6, (1, 1), groups=3, use_bias=False), x,
                        {"conv/kernel": kernel})
    np.testing.assert_array_equal(harness.forward(), y)


def test_conv2d_rejects_groups_that_do_not_divide():
    op = Conv2DOp("conv", 6, (3, 3), groups=4)
    with pytest.raises(ValueError, match="Conv2D 'conv': groups=4 must divide"):
        op.output_dims((1, 8, 5, 5))


# (input H, W, C), filters, kernel, strides, padding, output_padding, dilation, activation
TRANSPOSED = {
    "2x2-s2-valid": ((4, 5, 3), 4, (2, 2), (2, 2), "valid", None, (1, 1), None),
    "3x3-s2-same": ((4, 5, 3), 2, (3, 3), (2, 2), "same", None, (1, 1), "relu"),
    "3x3-s2-same-output-padding-1": ((4, 4, 2), 3, (3, 3), (2, 2), "same", (1, 1), (1, 1),
                                     None),
    "3x3-s2-valid-output-padding-1": ((3, 4, 2), 3, (3, 3), (2, 2), "valid", (1, 0), (1, 1),
                                      "tanh"),
    "3x3-s1-same": ((5, 6, 3), 4, (3, 3), (1, 1), "same", None, (1, 1), "sigmoid"),
    "3x3-s4-same (stride > kernel)": ((3, 3, 2), 2, (3, 3), (4, 4), "same", None, (1, 1),
                                      None),
    "1x1-s3-valid (stride > kernel)": ((3, 4, 2), 3, (1, 1), (3, 3), "valid", None, (1, 1),
                                       None),
    # oneDNN's jit_1x1 backward-weights in nhwc gets these wrong (see conv2d_transpose.py)
    "1x1-s2-valid-blocked": ((4, 4, 16), 16, (1, 1), (2, 2), "valid", None, (1, 1), None),
    "1x1-s2-same-3-channels": ((4, 4, 3), 2, (1, 1), (2, 2), "same", None, (1, 1), None),
    "3x3-dilated-2-valid": ((4, 5, 2), 3, (3, 3), (1, 1), "valid", None, (2, 2), None),
    "4x4-s2-same-blocked": ((4, 4, 16), 16, (4, 4), (2, 2), "same", None, (1, 1), "relu"),
}


@pytest.mark.parametrize("data_format", FORMATS)
@pytest.mark.parametrize("case", list(TRANSPOSED))
def test_conv2d_transpose(case, data_format):
    shape, filters, kernel, strides, padding, output_padding, dilation, activation = \
        TRANSPOSED[case]
    x, params, rng = _case(shape, (*kernel, filters, shape[2]), filters, data_format, True,
                           seed=len(case) + 2)
    op = Conv2DTransposeOp("conv", filters, kernel, strides, padding, output_padding, activation,
                           True, dilation)

    def reference(x64, k, b, dy=None):
        return conv2d_transpose_reference(x64, k, b, strides, padding, output_padding,
                                          dilation, activation, data_format, dy=dy)

    harness = _check(op, x, params, rng, data_format, reference, True)
    for call in harness.forward_calls + harness.backward_calls:
        if call.label.endswith(("forward", "backward data", "backward weights")):
            assert not call.primitive.pd.implementation.startswith("ref"), call.label


@pytest.mark.parametrize("padding,output_padding,expected", [
    ("valid", None, (9, 11)), ("same", None, (8, 10)), ("same", (1, 1), (8, 10)),
    ("same", (0, 0), (7, 9)), ("valid", (1, 0), (10, 11))])
def test_conv2d_transpose_output_dims_follow_keras(padding, output_padding, expected):
    """Keras's output length: valid (L-1)*s + max(k, s) [+ output_padding - default], same
    L*s, or (L-1)*s + k%2 + output_padding with an explicit output_padding."""
    op = Conv2DTransposeOp("conv", 5, (3, 3), (2, 2), padding, output_padding)
    assert op.output_dims((1, 2, 4, 5)) == (1, 5, *expected)
    assert op.parameter_dims((1, 2, 4, 5))["kernel"] == ((5, 2, 3, 3), dnnl.cdab)


# steps, channels, filters, kernel, strides, padding, dilation, groups, activation
CONV1D = {
    "k3-same": (9, 3, 4, 3, 1, "same", 1, 1, "relu"),
    "k3-valid-s2": (10, 4, 6, 3, 2, "valid", 1, 2, None),
    "k2-causal-dilated-2": (9, 3, 4, 2, 1, "causal", 2, 1, "tanh"),
    "k5-same-s2-16-channels": (12, 16, 16, 5, 2, "same", 1, 1, None),
}


def conv1d_reference(x, kernel, bias, strides, padding, dilation, groups, activation,
                     data_format, dy=None):
    """Keras Conv1D through the 2D reference on (N, 1, steps, C); 'causal' pads the left."""
    x2 = x[:, None] if data_format == CHANNELS_LAST else x.transpose(0, 2, 1)[:, None]
    if padding == "causal":
        x2 = np.pad(x2, ((0, 0), (0, 0), ((kernel.shape[0] - 1) * dilation, 0), (0, 0)))
    result = grouped_conv2d_reference(x2, kernel[None], bias, (1, strides),
                                      "valid" if padding == "causal" else padding,
                                      (1, dilation), groups, activation, dy=None if dy is None
                                      else (dy if data_format == CHANNELS_LAST
                                            else dy.transpose(0, 2, 1))[:, None])

    def back(y):
        y = y[:, 0]
        return y if data_format == CHANNELS_LAST else y.transpose(0, 2, 1)

    if dy is None:
        return back(result)
    y, dx, dk, db = result
    if padding == "causal":
        dx = dx[:, :, (kernel.shape[0] - 1) * dilation:]
    return back(y), back(dx), dk[0], db


@pytest.mark.parametrize("data_format", FORMATS)
@pytest.mark.parametrize("case", list(CONV1D))
def test_conv1d(case, data_format):
    from kiln.ops.conv1d import Conv1DOp
    steps, channels, filters, kernel, strides, padding, dilation, groups, activation = \
        CONV1D[case]
    rng = np.random.default_rng(len(case))
    x = rng.normal(size=(2, steps, channels) if data_format == CHANNELS_LAST
                   else (2, channels, steps)).astype(np.float32)
    params = {"conv/kernel": rng.normal(0, 0.4, size=(kernel, channels // groups, filters)),
              "conv/bias": rng.normal(0, 0.3, size=filters)}
    op = Conv1DOp("conv", filters, kernel, strides, padding, activation, True, dilation, groups,
                  data_format)
    dy = rng.normal(size=(2, *op.output_dims(x.shape)[1:])).astype(np.float32)

    def forward(x64, p64):
        return conv1d_reference(x64, p64["conv/kernel"], p64["conv/bias"], strides, padding,
                                dilation, groups, activation, data_format)

    def grads(x64, p64, dy64):
        _, dx, dk, db = conv1d_reference(x64, p64["conv/kernel"], p64["conv/bias"], strides,
                                         padding, dilation, groups, activation, data_format,
                                         dy=dy64)
        return dx, {"conv/kernel": dk, "conv/bias": db}

    check_op(op, x, params, dy, forward, data_format, grads, rtol=1e-4, atol=1e-4,
             grad_rtol=1e-4, grad_atol=2e-4, entries=4)


@pytest.mark.parametrize("data_format", FORMATS)
def test_conv2d_transpose_after_a_blocked_convolution(data_format):
    """After a convolution that writes a blocked layout, the transposed convolution runs in it
    (no reorder of its input), with the same values and gradients as the references."""
    from op_checker import conv2d_reference
    rng = np.random.default_rng(9)
    x = rng.normal(size=(2, 5, 6, 16)).astype(np.float32)
    if data_format == CHANNELS_FIRST:
        x = np.ascontiguousarray(x.transpose(0, 3, 1, 2))
    params = {"pre/kernel": rng.normal(0, 0.3, size=(1, 1, 16, 16)),
              "pre/bias": rng.normal(0, 0.3, size=16),
              "conv/kernel": rng.normal(0, 0.3, size=(3, 3, 8, 16)),
              "conv/bias": rng.normal(0, 0.3, size=8)}
    ops = [Conv2DOp("pre", 16, (1, 1), activation="relu"),
           Conv2DTransposeOp("conv", 8, (3, 3), (2, 2), "same", activation="tanh")]
    dy = rng.normal(size=(2, 10, 12, 8) if data_format == CHANNELS_LAST else (2, 8, 10, 12))

    def reference(x64, p64):
        hidden = conv2d_reference(x64, p64["pre/kernel"], p64["pre/bias"], activation="relu",
                                  data_format=data_format)
        return conv2d_transpose_reference(hidden, p64["conv/kernel"], p64["conv/bias"], (2, 2),
                                          "same", activation="tanh", data_format=data_format)

    _, harness = check_op(ops, x, params, dy.astype(np.float32), reference, data_format,
                          rtol=1e-4, atol=1e-4, entries=4)
    labels = [call.label for call in harness.forward_calls + harness.backward_calls]
    assert "conv input" not in labels and "conv input for weights" not in labels, labels
