"""kiln.ops.dense.DenseOp (2D and after FlattenOp of a 4D input) and kiln.ops.flatten.FlattenOp."""

import numpy as np
import pytest
from op_checker import (
    CHANNELS_FIRST,
    CHANNELS_LAST,
    OpHarness,
    check_op,
    conv2d_reference,
    dense_reference,
    run_ops,
)

from kiln.binding import constants as dnnl
from kiln.ops.conv2d import Conv2DOp
from kiln.ops.dense import DenseOp
from kiln.ops.flatten import FlattenOp

FORMATS = [CHANNELS_LAST, CHANNELS_FIRST]


def dense_case(activation, use_bias, data_format, seed=0):
    rng = np.random.default_rng(seed)
    h, w, c, units = 3, 4, 5, 6  # all different, so any feature-order mix-up shows
    shape = (2, h, w, c) if data_format == CHANNELS_LAST else (2, c, h, w)
    x = rng.normal(size=shape).astype(np.float32)
    params = {"dense/kernel": rng.normal(0, 0.3, size=(h * w * c, units)).astype(np.float32)}
    if use_bias:
        params["dense/bias"] = rng.normal(0, 0.3, size=units).astype(np.float32)
    dy = rng.normal(size=(2, units)).astype(np.float32)
    return x, params, dy, units


def hwc(x, data_format):
    """x in channels_last order: Keras flattens (H, W, C) in both data formats."""
    return x if data_format == CHANNELS_LAST or x.ndim != 4 else x.transpose(0, 2, 3, 1)


def reference_fns(activation, use_bias, data_format=CHANNELS_LAST):
    def reference(x64, p64):
        return dense_reference(hwc(x64, data_format), p64["dense/kernel"], p64.get("dense/bias"),
                               activation)

    def reference_grads(x64, p64, dy64):
        _, dx, dk, db = dense_reference(hwc(x64, data_format), p64["dense/kernel"],
                                        p64.get("dense/bias"), activation, dy64)
        if data_format != CHANNELS_LAST and dx.ndim == 4:
            dx = dx.transpose(0, 3, 1, 2)
        grads = {"dense/kernel": dk}
        if use_bias:
            grads["dense/bias"] = db
        return dx, grads

    return reference, reference_grads


@pytest.mark.parametrize("data_format", FORMATS)
@pytest.mark.parametrize("activation,use_bias", [(None, True), ("tanh", True),
                                                 ("sigmoid", False)])
@pytest.mark.parametrize("as_matrix", [False, True], ids=["4d", "matrix"])
def test_flatten_dense_4d_input(activation, use_bias, data_format, as_matrix):
    """DenseOp(FlattenOp(x)) == x.reshape(N, -1) @ W (+ b) with x and W in Keras layout: the
    flattened feature order is (H, W, C) in both formats, as Keras flattens."""
    x, params, dy, units = dense_case(activation, use_bias, data_format)
    reference, reference_grads = reference_fns(activation, use_bias, data_format)
    ops = [FlattenOp("flatten"), DenseOp("dense", units, activation, use_bias,
                                         flattened_as_matrix=as_matrix)]
    result, harness = check_op(ops, x, params, dy, reference, data_format, reference_grads,
                               rtol=1e-5, atol=1e-5, grad_rtol=1e-5, grad_atol=1e-5,
                               eps=1e-2, entries=5)
    activation_reorders = [label for label in harness.builder.reorder_labels
                           if not label.endswith("to layout")]
    # 4D: Flatten is free, no reorder of the activation on either pass; matrix: the view of
    # nhwc bytes is free for an nhwc input, one reorder into (h, w, c) order for an nchw one
    expected = ["dense input to (h, w, c) order"] if (
        as_matrix and data_format == CHANNELS_FIRST) else []
    assert activation_reorders == expected
    forward = next(call for call in harness.builder.forward_calls
                   if call.label == "dense forward")
    assert len(forward.args[dnnl.ARG_SRC].desc.dims) == (2 if as_matrix else 4)


@pytest.mark.parametrize("data_format", FORMATS)
def test_dense_after_flatten_kernel_round_trips_in_keras_layout(data_format):
    """The 4D weights are stored in a oneDNN layout; get_value gives back the Keras kernel
    and get_grad gives the gradient in Keras layout (== flat(x).T @ dy)."""
    x, params, dy, units = dense_case(None, True, data_format, seed=4)
    result, harness = run_ops([FlattenOp("flatten"), DenseOp("dense", units)], x, params, dy,
                              data_format)
    np.testing.assert_array_equal(harness.get_param("dense/kernel"), params["dense/kernel"])
    flat = hwc(x, data_format).reshape(2, -1).astype(np.float64)
    np.testing.assert_allclose(result.param_grads["dense/kernel"], flat.T @ dy, rtol=1e-5,
                               atol=1e-6)
    np.testing.assert_allclose(result.output, flat @ params["dense/kernel"] + params[
        "dense/bias"], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("data_format", FORMATS)
@pytest.mark.parametrize("as_matrix", [False, True], ids=["4d", "matrix"])
def test_conv_flatten_dense_blocked_input(data_format, as_matrix):
    """DenseOp reads the conv's (blocked) output through FlattenOp with 4D weights, or as the
    matrix of its nhwc bytes (one reorder)."""
    rng = np.random.default_rng(9)
    shape = (3, 6, 5, 2) if data_format == CHANNELS_LAST else (3, 2, 6, 5)
    x = rng.normal(size=shape).astype(np.float32)
    params = {"conv/kernel": rng.normal(0, 0.3, size=(3, 3, 2, 16)).astype(np.float32),
              "conv/bias": rng.normal(0, 0.1, size=16).astype(np.float32),
              "dense/kernel": rng.normal(0, 0.1, size=(4 * 3 * 16, 7)).astype(np.float32),
              "dense/bias": rng.normal(0, 0.1, size=7).astype(np.float32)}
    ops = [Conv2DOp("conv", 16, (3, 3), activation="tanh"), FlattenOp("flatten"),
           DenseOp("dense", 7, activation="sigmoid", flattened_as_matrix=as_matrix)]

    def reference(x64, p64):
        y = conv2d_reference(x64, p64["conv/kernel"], p64["conv/bias"], activation="tanh",
                             data_format=data_format)
        return dense_reference(hwc(y, data_format), p64["dense/kernel"], p64["dense/bias"],
                               "sigmoid")

    dy = rng.normal(size=(3, 7)).astype(np.float32)
    result, harness = check_op(ops, x, params, dy, reference, data_format, rtol=1e-4,
                               atol=1e-5, eps=1e-2, entries=3)
    assert not any("flatten" in label for label in harness.builder.reorder_labels)
    assert as_matrix or not any("dense input" in label
                                for label in harness.builder.reorder_labels)


@pytest.mark.parametrize("activation", [None, "linear", "relu", "tanh", "sigmoid"])
@pytest.mark.parametrize("use_bias", [True, False], ids=["bias", "no-bias"])
def test_dense_2d(activation, use_bias):
    rng = np.random.default_rng(1)
    x = rng.normal(size=(5, 9)).astype(np.float32)
    params = {"dense/kernel": rng.normal(0, 0.4, size=(9, 4)).astype(np.float32)}
    if use_bias:
        params["dense/bias"] = rng.normal(0, 0.3, size=4).astype(np.float32)
    dy = rng.normal(size=(5, 4)).astype(np.float32)
    reference, reference_grads = reference_fns(activation, use_bias)
    check_op(DenseOp("dense", 4, activation, use_bias), x, params, dy, reference,
             reference_grads=reference_grads, rtol=1e-5, atol=1e-5, grad_rtol=1e-5,
             grad_atol=1e-5, eps=1e-2, entries=5)


def test_dense_bias_gradient_is_dy_summed_over_batch():
    rng = np.random.default_rng(2)
    x = rng.normal(size=(6, 3)).astype(np.float32)
    params = {"dense/kernel": rng.normal(size=(3, 2)).astype(np.float32),
              "dense/bias": np.zeros(2, np.float32)}
    dy = rng.normal(size=(6, 2)).astype(np.float32)
    result, _ = run_ops(DenseOp("dense", 2), x, params, dy)
    np.testing.assert_allclose(result.param_grads["dense/bias"], dy.sum(axis=0), rtol=1e-5)


def test_dense_first_layer_has_no_input_gradient():
    rng = np.random.default_rng(3)
    x = rng.normal(size=(4, 3)).astype(np.float32)
    params = {"dense/kernel": rng.normal(size=(3, 2)).astype(np.float32),
              "dense/bias": np.zeros(2, np.float32)}
    dy = rng.normal(size=(4, 2)).astype(np.float32)
    result, harness = run_ops(DenseOp("dense", 2), x, params, dy, need_input_grad=False)
    assert result.input_grad is None
    np.testing.assert_allclose(result.param_grads["dense/kernel"],
                               x.T.astype(np.float64) @ dy, rtol=1e-5, atol=1e-6)


def test_dense_on_unflattened_4d_input_is_rejected():
    x = np.zeros((2, 3, 4, 5), np.float32)
    with pytest.raises(ValueError, match="add a Flatten layer"):
        OpHarness(DenseOp("dense", 3), x, {"dense/kernel": np.zeros((60, 3)),
                                        "dense/bias": np.zeros(3)})


def test_flatten_shapes():
    from kiln.binding.memory import Memory
    from kiln.ops.tensor import Tensor
    from kiln.plan.step_plan import plain_desc
    flatten = FlattenOp("f")
    assert flatten.output_dims((2, 3, 4, 5)) == (2, 3, 4, 5)
    assert flatten.parameter_dims((2, 3, 4, 5)) == {}
    for data_format in (CHANNELS_LAST, CHANNELS_FIRST):
        tensor = Tensor(Memory(plain_desc((2, 3, 4, 5), data_format)), data_format)
        out, backward = flatten.forward(None, tensor)
        assert out.keras_shape == (2, 60) and out.flattened and not tensor.flattened
        assert out.memory is tensor.memory
        assert backward("grad") == "grad"


def test_dense_parameter_dims_tags():
    dense = DenseOp("d", 7)
    assert dense.parameter_dims((2, 10)) == {"kernel": ((7, 10), dnnl.ba), "bias": ((7,), dnnl.a)}
    assert dense.parameter_dims((2, 3, 4, 5), CHANNELS_LAST)["kernel"] == ((7, 3, 4, 5),
                                                                          dnnl.cdba)
    # the same (H, W, C) row order in both formats, as Keras flattens
    assert dense.parameter_dims((2, 3, 4, 5), CHANNELS_FIRST)["kernel"] == ((7, 3, 4, 5),
                                                                           dnnl.cdba)
    # as a matrix: the plain (units, H*W*C) weights, rows in the same (H, W, C) order
    matrix = DenseOp("d", 7, flattened_as_matrix=True)
    for data_format in (CHANNELS_LAST, CHANNELS_FIRST):
        assert matrix.parameter_dims((2, 3, 4, 5), data_format)["kernel"] == ((7, 60), dnnl.ba)
