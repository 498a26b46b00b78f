"""kiln.ops.sequence_as_image.SequenceAsImageOp: 2D ops run on (batch, steps, channels)
sequences seen as images of height 1 (the Keras 1D layers), against numpy and central
differences, in both data formats; and after a tanh Conv1DOp (max pooling then applies tanh's
derivative to its pooled gradient)."""

import numpy as np
import pytest
from op_checker import CHANNELS_FIRST, CHANNELS_LAST, OpHarness, check_op, pool2d_reference

from kiln.ops.conv1d import Conv1DOp
from kiln.ops.global_pooling import GlobalPooling2DOp
from kiln.ops.noise import SpatialDropout2DOp
from kiln.ops.pad_crop import Cropping2DOp, ZeroPadding2DOp
from kiln.ops.pooling import Pooling2DOp
from kiln.ops.resize import UpSampling2DOp
from kiln.ops.sequence_as_image import SequenceAsImageOp

FORMATS = [CHANNELS_LAST, CHANNELS_FIRST]


def distinct_sequence(steps, channels, data_format, seed=0, batch=2):
    """Values with no ties and gaps of 0.01 (one argmax per window under small steps)."""
    rng = np.random.default_rng(seed)
    x = (rng.permutation(batch * steps * channels).reshape(batch, steps, channels) * 0.01
         - 1.0).astype(np.float32)
    return to_format(x, data_format), rng


def to_format(x, data_format):
    """A channels_last sequence in `data_format`."""
    return x if data_format == CHANNELS_LAST else np.ascontiguousarray(x.transpose(0, 2, 1))


def as_image(x, data_format):
    """(N, T, C) -> (N, 1, T, C) in channels_last, (N, C, T) -> (N, C, 1, T) otherwise."""
    return x[:, None] if data_format == CHANNELS_LAST else x[:, :, None]


def as_sequence(y, data_format):
    return y[:, 0] if data_format == CHANNELS_LAST else y[:, :, 0]


POOL_CASES = {  # steps, pool_size, strides, padding
    "2-s2-valid": (9, 2, 2, "valid"),
    "3-s1-same": (7, 3, 1, "same"),
    "3-s2-same": (8, 3, 2, "same"),
    "2-s3-valid": (10, 2, 3, "valid"),
}


@pytest.mark.parametrize("data_format", FORMATS)
@pytest.mark.parametrize("case", list(POOL_CASES))
@pytest.mark.parametrize("mode", ["max", "avg"])
def test_pooling(mode, case, data_format):
    steps, pool, stride, padding = POOL_CASES[case]
    x, rng = distinct_sequence(steps, 3, data_format)
    op = SequenceAsImageOp(Pooling2DOp("pool", mode, (1, pool), (1, stride), padding),
                           data_format, "MaxPooling1D")

    def pooled(x64, dy=None):
        return pool2d_reference(as_image(x64, data_format), mode, (1, pool), (1, stride),
                                padding, data_format,
                                None if dy is None else as_image(dy, data_format))

    expected = as_sequence(pooled(x.astype(np.float64)), data_format)
    dy = rng.normal(size=expected.shape).astype(np.float32)

    def reference_grads(x64, p64, dy64):
        return as_sequence(pooled(x64, dy64)[1], data_format), {}

    check_op(op, x, {}, dy, lambda x64, p64: as_sequence(pooled(x64), data_format),
             data_format, reference_grads, eps=1e-3, entries=8)


@pytest.mark.parametrize("keepdims", [False, True])
@pytest.mark.parametrize("data_format", FORMATS)
@pytest.mark.parametrize("mode", ["avg", "max"])
def test_global_pooling(mode, data_format, keepdims):
    x, rng = distinct_sequence(7, 4, data_format, seed=1)
    steps_axis = 1 if data_format == CHANNELS_LAST else 2
    reduce = np.max if mode == "max" else np.mean
    op = SequenceAsImageOp(GlobalPooling2DOp("gp", mode, keepdims), data_format,
                           "GlobalMaxPooling1D")

    def reference(x64, p64):
        return reduce(x64, axis=steps_axis, keepdims=keepdims)

    def reference_grads(x64, p64, dy64):
        dy = dy64 if keepdims else np.expand_dims(dy64, steps_axis)
        if mode == "avg":
            return np.broadcast_to(dy / x64.shape[steps_axis], x64.shape), {}
        return np.where(x64 == x64.max(axis=steps_axis, keepdims=True), dy, 0.0), {}

    dy = rng.normal(size=reference(x, {}).shape).astype(np.float32)
    result, _ = check_op(op, x, {}, dy, reference, data_format, reference_grads, eps=1e-3,
                         entries=6)
    assert result.output.ndim == (3 if keepdims else 2)


def conv1d_tanh(x, kernel, bias, data_format):
    """Keras Conv1D ('valid', stride 1) with tanh, float64."""
    x = x if data_format == CHANNELS_LAST else x.transpose(0, 2, 1)
    k = kernel.shape[0]
    windows = np.stack([x[:, i:i + x.shape[1] - k + 1] for i in range(k)], axis=2)
    y = np.tanh(np.einsum("ntkc,kco->nto", windows, kernel) + bias)
    return to_format(y, data_format)


@pytest.mark.parametrize("data_format", FORMATS)
def test_max_pooling_after_tanh_conv1d(data_format):
    """The pooling takes over tanh's derivative (applied to the pooled gradient) through the
    views, and the convolution leaves it out: the gradients of its kernel, bias and input are
    still exact."""
    rng = np.random.default_rng(3)
    x = rng.normal(size=(2, 10, 3)).astype(np.float32)
    x = to_format(x, data_format)
    params = {"conv/kernel": rng.normal(0, 0.5, size=(3, 3, 4)).astype(np.float32),
              "conv/bias": rng.normal(0, 0.1, size=4).astype(np.float32)}
    conv = Conv1DOp("conv", 4, 3, activation="tanh", data_format=data_format)
    pool = SequenceAsImageOp(Pooling2DOp("pool", "max", (1, 2), (1, 2)), data_format,
                             "MaxPooling1D")

    def reference(x64, p64):
        y = as_image(conv1d_tanh(x64, p64["conv/kernel"], p64["conv/bias"], data_format),
                     data_format)
        return as_sequence(pool2d_reference(y, "max", (1, 2), (1, 2), "valid", data_format),
                           data_format)

    dy = rng.normal(size=reference(x, params).shape).astype(np.float32)
    _, harness = check_op([conv, pool], x, params, dy, reference, data_format, eps=1e-3,
                          entries=8)
    labels = [call.label for call in harness.backward_calls]
    assert any("pool" in label and "tanh" in label for label in labels), labels


def test_a_sequence_op_refuses_another_rank():
    op = SequenceAsImageOp(Pooling2DOp("p", "max", (1, 2), (1, 2)), CHANNELS_LAST,
                           "MaxPooling1D")
    with pytest.raises(ValueError, match="MaxPooling1D 'p': expected a 3D"):
        op.output_dims((1, 4, 4, 2))


def steps_axis(data_format):
    return 1 if data_format == CHANNELS_LAST else 2


def linear_adjoint(function, x, dy):
    """J^T dy of a linear function of x, from its values on the unit vectors."""
    grad = np.zeros(x.size)
    for i in range(x.size):
        unit = np.zeros(x.size)
        unit[i] = 1.0
        grad[i] = np.sum(function(unit.reshape(x.shape)) * dy)
    return grad.reshape(x.shape)


def check_linear(op, function, x, data_format):
    """`op` against the linear `function` (float64 numpy): output and input gradient."""
    rng = np.random.default_rng(7)
    dy = rng.normal(size=function(x).shape).astype(np.float32)
    return check_op(op, x, {}, dy, lambda x64, p64: function(x64), data_format,
                    lambda x64, p64, dy64: (linear_adjoint(function, x64, dy64), {}),
                    entries=6)


# name -> (2D op, numpy function of a sequence, given its steps axis)
SHAPE_OPS = {
    "upsampling-3": (lambda: UpSampling2DOp("up", (1, 3)),
                     lambda x, axis: np.repeat(x, 3, axis=axis)),
    "padding-2-1": (lambda: ZeroPadding2DOp("pad", ((0, 0), (2, 1))),
                    lambda x, axis: np.pad(x, [(0, 0) if a != axis else (2, 1)
                                               for a in range(3)])),
    "cropping-1-2": (lambda: Cropping2DOp("crop", ((0, 0), (1, 2))),
                     lambda x, axis: np.take(x, range(1, x.shape[axis] - 2), axis=axis)),
}


@pytest.mark.parametrize("data_format", FORMATS)
@pytest.mark.parametrize("name", list(SHAPE_OPS))
def test_shape_ops(name, data_format):
    make, function = SHAPE_OPS[name]
    x, _ = distinct_sequence(6, 3, data_format, seed=4)
    op = SequenceAsImageOp(make(), data_format, name)
    check_linear(op, lambda v: function(v, steps_axis(data_format)), x, data_format)


def test_cropping_gradient_is_not_writable_through_the_view():
    """Cropping's input gradient is a buffer whose border is zeroed once and never written
    again: the op hands it on as shared (not writable in place), and so must the 3D view of
    it, or an op before it could write its own gradient into it."""
    x = np.random.default_rng(8).normal(size=(2, 8, 3)).astype(np.float32)
    op = SequenceAsImageOp(Cropping2DOp("crop", ((0, 0), (2, 1))), CHANNELS_LAST,
                           "Cropping1D")
    harness = OpHarness(op, x)
    assert len(harness.input_grad_memory.desc.dims) == 3
    assert not harness.builder.writable(harness.input_grad_memory)


def test_repeat_vector():
    """A (batch, features) matrix -> (batch, n, features): the image (N, F, 1, 1) up-sampled
    by (1, n) in nhwc; its gradient is the sum over the n steps."""
    x = np.random.default_rng(9).normal(size=(3, 5)).astype(np.float32)
    op = SequenceAsImageOp(UpSampling2DOp("repeat", (1, 4)), CHANNELS_LAST, "RepeatVector",
                           input_rank=2)
    assert op.output_dims((3, 5)) == (3, 4, 5)
    check_linear(op, lambda v: np.repeat(v[:, None], 4, axis=1), x, CHANNELS_LAST)


@pytest.mark.parametrize("data_format", FORMATS)
def test_spatial_dropout_drops_every_step_of_a_channel(data_format):
    rng = np.random.default_rng(10)
    x = rng.uniform(1, 2, size=(16, 7, 12)).astype(np.float32)  # no zeros
    x = to_format(x, data_format)
    op = SequenceAsImageOp(SpatialDropout2DOp("drop", 0.5, seed=3), data_format,
                           "SpatialDropout1D")
    harness = OpHarness(op, x, data_format=data_format)
    y = harness.forward()
    scale = np.round(y / x, 5)
    # the same factor at every step of a (sample, channel): 0 or 1 / (1 - rate)
    assert np.all(scale == np.take(scale, [0], axis=steps_axis(data_format)))
    assert set(np.unique(scale)) == {0.0, 2.0}
    assert 0.3 < np.mean(scale == 0) < 0.7
    dy = rng.normal(size=x.shape).astype(np.float32)
    grad, _ = harness.backward(dy)
    np.testing.assert_allclose(grad, dy * (y / x), rtol=1e-6)


def test_spatial_dropout_of_rate_0_passes_the_activation_through():
    """At rate 0 (and outside training) the op is the identity and hands on the tensor
    itself: the max pooling after it takes over the tanh derivative from the convolution
    before it, which must then leave it out (applying it twice would be wrong)."""
    rng = np.random.default_rng(11)
    x = rng.normal(size=(2, 8, 3)).astype(np.float32)
    params = {"conv/kernel": rng.normal(0, 0.5, size=(3, 3, 4)).astype(np.float32),
              "conv/bias": rng.normal(0, 0.1, size=4).astype(np.float32)}
    ops = [Conv1DOp("conv", 4, 3, activation="tanh"),
           SequenceAsImageOp(SpatialDropout2DOp("drop", 0.0), CHANNELS_LAST,
                             "SpatialDropout1D"),
           SequenceAsImageOp(Pooling2DOp("pool", "max", (1, 2), (1, 2)), CHANNELS_LAST,
                             "MaxPooling1D")]

    def reference(x64, p64):
        y = as_image(conv1d_tanh(x64, p64["conv/kernel"], p64["conv/bias"], CHANNELS_LAST),
                     CHANNELS_LAST)
        return as_sequence(pool2d_reference(y, "max", (1, 2), (1, 2)), CHANNELS_LAST)

    dy = rng.normal(size=reference(x, params).shape).astype(np.float32)
    check_op(ops, x, params, dy, reference, eps=1e-3, entries=8)
