"""kiln.ops.sequence_as_image.SequenceAsImageOp: 2D ops run on (batch, steps, channels)
sequences seen as images of height 1 (the Keras 1D layers), against numpy and central
differences, in both data formats; and after a tanh Conv1DOp (max pooling then applies tanh's
derivative to its pooled gradient)."""

import numpy as np
import pytest
from op_checker import CHANNELS_FIRST, CHANNELS_LAST, check_op, pool2d_reference

from kiln.ops.conv1d import Conv1DOp
from kiln.ops.global_pooling import GlobalPooling2DOp
from kiln.ops.pooling import Pooling2DOp
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
