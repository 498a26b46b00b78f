"""kiln.ops.time_distributed: the wrapped op between FoldTimeOp and UnfoldTimeOp equals the op
applied to every time slice on its own (numpy, per slice), values and gradients (and central
differences), for a convolution, max pooling, Dense, Flatten and dropout, on videos in both
data formats; the views add no call where the bytes are already in Keras order. A wrapped
batch normalization in training normalizes every time step with its own statistics and updates
the moving ones once per step (TimeStepBatchNormOp)."""

import numpy as np
import pytest
from op_checker import (
    CHANNELS_FIRST,
    CHANNELS_LAST,
    OpHarness,
    check_op,
    conv2d_reference,
    dense_reference,
    pool2d_reference,
)

from kiln.ops.batch_norm import BatchNormOp
from kiln.ops.conv2d import Conv2DOp
from kiln.ops.dense import DenseOp
from kiln.ops.dropout import DropoutOp
from kiln.ops.flatten import FlattenOp
from kiln.ops.pooling import Pooling2DOp
from kiln.ops.time_distributed import FoldTimeOp, UnfoldTimeOp
from kiln.ops.time_step_batch_norm import TimeStepBatchNormOp

N, T = 2, 3
FORMATS = [CHANNELS_LAST, CHANNELS_FIRST]


def wrapped(op, data_format, flattened=False):
    return [FoldTimeOp("td/fold", T, data_format, data_format), op,
            UnfoldTimeOp("td/unfold", T, data_format, data_format, flattened)]


def per_slice(function):
    """A reference on (N*T, ...) slices applied to a (N, T, ...) array."""
    def reference(x, *args, **kwargs):
        out = function(x.reshape(N * T, *x.shape[2:]), *args, **kwargs)
        return out.reshape(N, T, *out.shape[1:])
    return reference


def video(data_format, rng, channels=2, size=(5, 4)):
    shape = (N, T, *size, channels) if data_format == CHANNELS_LAST else (N, T, channels, *size)
    return rng.standard_normal(shape).astype(np.float32)


@pytest.mark.parametrize("data_format", FORMATS)
def test_conv2d_on_every_slice(data_format):
    rng = np.random.default_rng(0)
    x = video(data_format, rng)
    kernel = rng.standard_normal((3, 3, 2, 4)).astype(np.float32) * 0.5
    bias = rng.standard_normal(4).astype(np.float32)
    params = {"conv/kernel": kernel, "conv/bias": bias}
    op = Conv2DOp("conv", 4, (3, 3), padding="same", activation="tanh")
    out_shape = (N, T, 5, 4, 4) if data_format == CHANNELS_LAST else (N, T, 4, 5, 4)
    dy = rng.standard_normal(out_shape).astype(np.float32)

    def reference(x, p):
        return per_slice(conv2d_reference)(x, p["conv/kernel"], p["conv/bias"],
                                           padding="same", activation="tanh",
                                           data_format=data_format)

    def reference_grads(x, p, dy):
        _, dx, dkernel, dbias = conv2d_reference(
            x.reshape(N * T, *x.shape[2:]), p["conv/kernel"], p["conv/bias"], padding="same",
            activation="tanh", data_format=data_format, dy=dy.reshape(N * T, *dy.shape[2:]))
        return dx.reshape(x.shape), {"conv/kernel": dkernel, "conv/bias": dbias}

    check_op(wrapped(op, data_format), x, params, dy, reference, data_format,
             reference_grads=reference_grads)


@pytest.mark.parametrize("data_format", FORMATS)
def test_max_pooling_on_every_slice(data_format):
    rng = np.random.default_rng(1)
    x = video(data_format, rng, channels=3, size=(4, 6))
    out_shape = (N, T, 2, 3, 3) if data_format == CHANNELS_LAST else (N, T, 3, 2, 3)
    dy = rng.standard_normal(out_shape).astype(np.float32)

    def reference(x, p):
        return per_slice(pool2d_reference)(x, "max", (2, 2), (2, 2), data_format=data_format)

    def reference_grads(x, p, dy):
        _, dx = pool2d_reference(x.reshape(N * T, *x.shape[2:]), "max", (2, 2), (2, 2),
                                 data_format=data_format, dy=dy.reshape(N * T, *dy.shape[2:]))
        return dx.reshape(x.shape), {}

    check_op(wrapped(Pooling2DOp("pool", "max", (2, 2), (2, 2)), data_format), x, {}, dy,
             reference, data_format, reference_grads=reference_grads)


def test_dense_on_every_step_reads_the_input_in_place():
    rng = np.random.default_rng(2)
    x = rng.standard_normal((N, T, 5)).astype(np.float32)
    kernel = rng.standard_normal((5, 4)).astype(np.float32)
    bias = rng.standard_normal(4).astype(np.float32)
    params = {"dense/kernel": kernel, "dense/bias": bias}
    dy = rng.standard_normal((N, T, 4)).astype(np.float32)

    def reference(x, p):
        return per_slice(dense_reference)(x, p["dense/kernel"], p["dense/bias"], "relu")

    def reference_grads(x, p, dy):
        _, dx, dkernel, dbias = dense_reference(x.reshape(N * T, 5), p["dense/kernel"],
                                                p["dense/bias"], "relu", dy.reshape(N * T, 4))
        return dx.reshape(x.shape), {"dense/kernel": dkernel, "dense/bias": dbias}

    _, harness = check_op(wrapped(DenseOp("dense", 4, "relu"), CHANNELS_LAST), x, params, dy,
                          reference, reference_grads=reference_grads)
    # (N, T, F) is already the plain (N*T, F) matrix: the views need no reorder
    assert [call.label for call in harness.forward_calls if "Keras order" in call.label] == []


@pytest.mark.parametrize("data_format", FORMATS)
def test_flatten_gives_every_slice_in_height_width_channel_order(data_format):
    rng = np.random.default_rng(3)
    x = video(data_format, rng)
    harness = OpHarness(wrapped(FlattenOp("flat"), data_format, flattened=True), x,
                        data_format=data_format)
    expected = x if data_format == CHANNELS_LAST else x.transpose(0, 1, 3, 4, 2)
    np.testing.assert_array_equal(harness.forward(), expected.reshape(N, T, -1))
    dy = rng.standard_normal((N, T, 5 * 4 * 2)).astype(np.float32)
    input_grad, _ = harness.backward(dy)
    back = dy.reshape(N, T, 5, 4, 2)
    if data_format == CHANNELS_FIRST:
        back = back.transpose(0, 1, 4, 2, 3)
    np.testing.assert_array_equal(input_grad, back)


def test_dropout_draws_every_slice_on_its_own():
    rate = 0.5
    x = np.ones((4, T, 32, 32, 8), np.float32)
    harness = OpHarness([FoldTimeOp("td/fold", T, CHANNELS_LAST, CHANNELS_LAST),
                         DropoutOp("drop", rate, seed=5),
                         UnfoldTimeOp("td/unfold", T, CHANNELS_LAST, CHANNELS_LAST)], x)
    y = harness.forward()
    kept = y != 0
    np.testing.assert_allclose(y[kept], 1 / (1 - rate))
    per_slice_kept = kept.reshape(4 * T, -1).mean(axis=1)
    assert np.all(np.abs(per_slice_kept - (1 - rate)) < 0.05)
    # independent masks: two slices agree on about half of their positions
    slices = kept.reshape(4 * T, -1)
    assert 0.45 < (slices[0] == slices[1]).mean() < 0.55
    assert 0.45 < (slices[0] == slices[T]).mean() < 0.55


def test_rank_below_three_is_refused_by_name():
    with pytest.raises(ValueError, match=r"TimeDistributed 'td'.*at least 3 dimensions"):
        FoldTimeOp("td", T, CHANNELS_LAST, CHANNELS_LAST).output_dims((1, 5))


def batch_norm_per_step_reference(x, gamma, beta, axes, epsilon=1e-3):
    """Keras's BatchNormalization on every time step (axis 1) alone: statistics over `axes`."""
    mean = x.mean(axis=axes, keepdims=True)
    variance = x.var(axis=axes, keepdims=True)
    return gamma * (x - mean) / np.sqrt(variance + epsilon) + beta, mean, variance


@pytest.mark.parametrize("kind", ["sequence", CHANNELS_LAST, CHANNELS_FIRST])
def test_batch_norm_normalizes_every_step_on_its_own(kind):
    rng = np.random.default_rng(6)
    data_format = CHANNELS_FIRST if kind == CHANNELS_FIRST else CHANNELS_LAST
    if kind == "sequence":
        x, axes, channel_shape = rng.standard_normal((4, T, 5)), (0,), (5,)
    else:
        x = video(data_format, rng, channels=3, size=(3, 2)).astype(np.float64)
        axes = (0, 2, 3) if data_format == CHANNELS_LAST else (0, 3, 4)
        channel_shape = (3,) if data_format == CHANNELS_LAST else (3, 1, 1)
    x = (x + 3.0 * np.arange(T).reshape(1, T, *[1] * (x.ndim - 2))).astype(np.float32)
    channels = channel_shape[0]
    momentum = 0.6
    bn = BatchNormOp("bn", momentum=momentum)
    ops = wrapped(bn, data_format)
    op = TimeStepBatchNormOp(bn, ops[0], ops[2], data_format)
    params = {"bn/gamma": rng.uniform(0.5, 1.5, channels), "bn/beta": rng.normal(size=channels),
              "bn/moving_mean": rng.normal(size=channels),
              "bn/moving_variance": rng.uniform(0.5, 1.5, channels)}
    dy = rng.standard_normal(x.shape).astype(np.float32)

    def reference(x, p):
        return batch_norm_per_step_reference(x, p["bn/gamma"].reshape(channel_shape),
                                             p["bn/beta"].reshape(channel_shape), axes)[0]

    check_op(op, x, params, dy, reference, data_format, rtol=1e-4, atol=1e-4)
    # one forward from the given moving statistics: one update per time step, in order
    harness = OpHarness(op, x, params, data_format)
    harness.forward()
    _, means, variances = batch_norm_per_step_reference(x.astype(np.float64), 1.0, 0.0, axes)
    moving_mean = params["bn/moving_mean"].astype(np.float64)
    moving_variance = params["bn/moving_variance"].astype(np.float64)
    for t in range(T):
        moving_mean = moving_mean * momentum + means[:, t].reshape(-1) * (1 - momentum)
        moving_variance = moving_variance * momentum + variances[:, t].reshape(-1) * (
            1 - momentum)
    np.testing.assert_allclose(harness.get_param("bn/moving_mean"), moving_mean, rtol=1e-5,
                               atol=1e-6)
    np.testing.assert_allclose(harness.get_param("bn/moving_variance"), moving_variance,
                               rtol=1e-5, atol=1e-6)
