"""kiln.ops.conv2d.Conv2DOp against a float64 numpy convolution and central differences."""


import numpy as np
import pytest
from op_checker import CHANNELS_FIRST, CHANNELS_LAST, check_op, conv2d_reference, run_ops

from kiln.ops.conv2d import Conv2DOp, conv_output_length, same_padding

FORMATS = [CHANNELS_LAST, CHANNELS_FIRST]

# (input H, W, C), filters, kernel, strides, padding
GEOMETRIES = {
    "valid-s1-3x3": ((7, 9, 3), 4, (3, 3), (1, 1), "valid"),
    "same-s1-3x3": ((7, 9, 3), 4, (3, 3), (1, 1), "same"),
    "same-s2-3x3": ((7, 9, 3), 5, (3, 3), (2, 2), "same"),
    "valid-s2-5x3": ((9, 8, 2), 3, (5, 3), (2, 2), "valid"),
    "same-s2-2x2-even-kernel": ((6, 7, 3), 4, (2, 2), (2, 2), "same"),
    "same-s1-4x4-asymmetric-pad": ((5, 6, 2), 3, (4, 4), (1, 1), "same"),
    "valid-s1x2-1x5": ((5, 11, 3), 2, (1, 5), (1, 2), "valid"),
    # enough channels for blocked (nChw16c-style) activations and weights
    "same-s1-3x3-16to32-blocked": ((6, 7, 16), 32, (3, 3), (1, 1), "same"),
    "valid-s2-3x3-16to16-blocked": ((7, 6, 16), 16, (3, 3), (2, 2), "valid"),
    "same-s1-3x3-8to16-grad-layout": ((6, 7, 8), 16, (3, 3), (1, 1), "same"),
}

def geometry_params():
    # "8to16-grad-layout": the weight gradient comes in another layout than the stored weight
    # and is reordered after backward-weights (a regression test for a recursion once there).
    return [pytest.param(name, id=name) for name in GEOMETRIES]


def make_case(geometry, data_format, use_bias, seed):
    (h, w, c), filters, kernel_size, _, _ = geometry
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(2, h, w, c)).astype(np.float32)
    if data_format == CHANNELS_FIRST:
        x = np.ascontiguousarray(x.transpose(0, 3, 1, 2))
    params = {"conv/kernel": rng.normal(0, 0.4, size=(*kernel_size, c, filters)).astype(
        np.float32)}
    if use_bias:
        params["conv/bias"] = rng.normal(0, 0.3, size=filters).astype(np.float32)
    return x, params, rng


def run_conv_case(geometry, data_format, activation, use_bias, need_input_grad=True,
                  numeric=True, seed=0, entries=5):
    (h, w, c), filters, kernel_size, strides, padding = geometry
    x, params, rng = make_case(geometry, data_format, use_bias, seed)
    op = Conv2DOp("conv", filters, kernel_size, strides, padding, activation, use_bias)
    out_h = conv_output_length(h, kernel_size[0], strides[0], padding)
    out_w = conv_output_length(w, kernel_size[1], strides[1], padding)
    out_shape = ((2, out_h, out_w, filters) if data_format == CHANNELS_LAST
                 else (2, filters, out_h, out_w))
    dy = rng.normal(size=out_shape).astype(np.float32)

    def reference(x64, p64):
        return conv2d_reference(x64, p64["conv/kernel"], p64.get("conv/bias"), strides, padding,
                                activation, data_format)

    def reference_grads(x64, p64, dy64):
        _, dx, dk, db = conv2d_reference(x64, p64["conv/kernel"], p64.get("conv/bias"), strides,
                                         padding, activation, data_format, dy=dy64)
        grads = {"conv/kernel": dk}
        if use_bias:
            grads["conv/bias"] = db
        return dx, grads

    return check_op(op, x, params, dy, reference, data_format, reference_grads,
                    need_input_grad=need_input_grad, numeric=numeric, rtol=1e-4, atol=1e-4,
                    grad_rtol=1e-4, grad_atol=2e-4, eps=1e-2, entries=entries)


@pytest.mark.parametrize("data_format", FORMATS)
@pytest.mark.parametrize("geometry", geometry_params())
def test_conv2d_geometries(geometry, data_format):
    """Forward, input/kernel/bias gradients vs numpy; gradients vs central differences."""
    result, harness = run_conv_case(GEOMETRIES[geometry], data_format, "tanh", True)
    assert result.output.shape == harness.output_shape


@pytest.mark.parametrize("data_format", FORMATS)
@pytest.mark.parametrize("use_bias", [True, False], ids=["bias", "no-bias"])
@pytest.mark.parametrize("activation", [None, "linear", "relu", "tanh", "sigmoid"])
def test_conv2d_fused_activations(activation, use_bias, data_format):
    run_conv_case(GEOMETRIES["same-s2-3x3"], data_format, activation, use_bias, seed=1,
                  entries=3)


@pytest.mark.parametrize("data_format", FORMATS)
def test_conv2d_no_bias_has_no_bias_parameter(data_format):
    result, harness = run_conv_case(GEOMETRIES["valid-s1-3x3"], data_format, None, False,
                                    numeric=False)
    assert set(result.param_grads) == {"conv/kernel"}
    assert "conv/bias" not in harness.store


@pytest.mark.parametrize("data_format", FORMATS)
def test_conv2d_bias_gradient_is_dy_summed_over_n_h_w(data_format):
    geometry = GEOMETRIES["same-s1-3x3"]
    x, params, rng = make_case(geometry, data_format, True, seed=3)
    op = Conv2DOp("conv", 4, (3, 3), padding="same")
    shape = (2, 7, 9, 4) if data_format == CHANNELS_LAST else (2, 4, 7, 9)
    dy = rng.normal(size=shape).astype(np.float32)
    result, _ = run_ops(op, x, params, dy, data_format)
    axes = (0, 1, 2) if data_format == CHANNELS_LAST else (0, 2, 3)
    np.testing.assert_allclose(result.param_grads["conv/bias"], dy.astype(np.float64).sum(axes),
                               rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("data_format", FORMATS)
def test_conv2d_first_layer_has_no_input_gradient(data_format):
    """need_input_grad=False: backward returns None but still computes kernel and bias grads."""
    result, harness = run_conv_case(GEOMETRIES["same-s2-3x3"], data_format, "relu", True,
                                    need_input_grad=False, numeric=False)
    assert result.input_grad is None
    assert harness.input_grad_memory is None
    assert not any("backward data" in call.label for call in harness.backward_calls)
    assert any("backward weights" in call.label for call in harness.backward_calls)


def test_conv2d_channels_first_equals_channels_last():
    """data_format only changes the input/output edge: same numbers, transposed."""
    geometry = GEOMETRIES["same-s2-3x3"]
    results = {}
    for data_format in FORMATS:
        x, params, rng = make_case(geometry, CHANNELS_LAST, True, seed=5)
        dy = rng.normal(size=(2, 4, 5, 5)).astype(np.float32)
        if data_format == CHANNELS_FIRST:
            x, dy = x.transpose(0, 3, 1, 2).copy(), dy.transpose(0, 3, 1, 2).copy()
        results[data_format], _ = run_ops(Conv2DOp("conv", 5, (3, 3), (2, 2), "same", "sigmoid"),
                                          x, params, dy, data_format)
    last, first = results[CHANNELS_LAST], results[CHANNELS_FIRST]
    np.testing.assert_allclose(first.output.transpose(0, 2, 3, 1), last.output, rtol=1e-5,
                               atol=1e-6)
    np.testing.assert_allclose(first.input_grad.transpose(0, 2, 3, 1), last.input_grad,
                               rtol=1e-5, atol=1e-6)
    for name in last.param_grads:
        np.testing.assert_allclose(first.param_grads[name], last.param_grads[name], rtol=1e-5,
                                   atol=1e-5)


def test_conv2d_repeated_runs_are_stable():
    """Running the same plan twice (buffers reused) gives the same result."""
    geometry = GEOMETRIES["same-s1-3x3"]
    x, params, rng = make_case(geometry, CHANNELS_LAST, True, seed=7)
    dy = rng.normal(size=(2, 7, 9, 4)).astype(np.float32)
    first, harness = run_ops(Conv2DOp("conv", 4, (3, 3), padding="same", activation="relu"), x,
                             params, dy)
    second = harness.run(x, dy)
    np.testing.assert_array_equal(first.output, second.output)
    np.testing.assert_array_equal(first.input_grad, second.input_grad)
    for name in first.param_grads:
        np.testing.assert_array_equal(first.param_grads[name], second.param_grads[name])


@pytest.mark.parametrize("length,kernel,stride,expected", [
    (7, 3, 1, (1, 1)), (7, 3, 2, (1, 1)), (6, 2, 2, (0, 0)), (5, 4, 1, (1, 2)),
    (8, 3, 2, (0, 1)), (9, 1, 1, (0, 0))])
def test_same_padding_matches_tensorflow(length, kernel, stride, expected):
    assert same_padding(length, kernel, stride) == expected


def test_output_dims_and_parameter_dims():
    from kiln.binding import constants as dnnl
    op = Conv2DOp("conv", 6, (5, 3), (2, 1), "valid")
    assert op.output_dims((4, 3, 11, 7)) == (4, 6, 4, 5)
    assert op.parameter_dims((4, 3, 11, 7)) == {"kernel": ((6, 3, 5, 3), dnnl.cdba),
                                                "bias": ((6,), dnnl.a)}
    with pytest.raises(ValueError, match="smaller than kernel_size"):
        op.output_dims((1, 3, 4, 7))


@pytest.mark.parametrize("data_format", FORMATS)
@pytest.mark.parametrize("activation", [None, "relu", "sigmoid"])
def test_conv2d_inference_builder(activation, data_format):
    """forward_inference primitives give the training forward's numbers, and no backward."""
    from op_checker import OpHarness
    geometry = GEOMETRIES["same-s1-3x3-16to32-blocked"]
    x, params, _ = make_case(geometry, data_format, True, seed=8)
    harness = OpHarness(Conv2DOp("conv", 32, (3, 3), padding="same", activation=activation), x,
                        params, data_format, training=False)
    expected = conv2d_reference(x.astype(np.float64), params["conv/kernel"].astype(np.float64),
                                params["conv/bias"].astype(np.float64), (1, 1), "same",
                                activation, data_format)
    np.testing.assert_allclose(harness.forward(), expected, rtol=1e-4, atol=1e-4)
    assert harness.builder.backward_calls == []
