"""kiln.ops.global_pooling.GlobalPooling2DOp (oneDNN pooling over the whole image) against numpy
and central differences, in both data formats, with and without keepdims."""

import numpy as np
import pytest
from op_checker import CHANNELS_FIRST, CHANNELS_LAST, check_op
from test_ops_pooling import distinct_input

from kiln.ops.conv2d import Conv2DOp
from kiln.ops.dense import DenseOp
from kiln.ops.global_pooling import GlobalPooling2DOp


def global_reference(x, mode, data_format, keepdims):
    axes = (1, 2) if data_format == CHANNELS_LAST else (2, 3)
    reduce = np.max if mode == "max" else np.mean
    return reduce(x, axis=axes, keepdims=keepdims)


@pytest.mark.parametrize("keepdims", [False, True])
@pytest.mark.parametrize("data_format", [CHANNELS_LAST, CHANNELS_FIRST])
@pytest.mark.parametrize("mode", ["avg", "max"])
def test_global_pooling(mode, data_format, keepdims):
    x, rng = distinct_input((2, 5, 4, 3), data_format, seed=2)
    expected = global_reference(x.astype(np.float64), mode, data_format, keepdims)
    dy = rng.normal(size=expected.shape).astype(np.float32)

    def reference(x64, p64):
        return global_reference(x64, mode, data_format, keepdims)

    def reference_grads(x64, p64, dy64):
        axes = (1, 2) if data_format == CHANNELS_LAST else (2, 3)
        dyk = dy64 if keepdims else np.expand_dims(dy64, axes)
        if mode == "avg":
            return np.broadcast_to(dyk / (x64.shape[axes[0]] * x64.shape[axes[1]]),
                                   x64.shape), {}
        return np.where(x64 == x64.max(axis=axes, keepdims=True), dyk, 0.0), {}

    check_op(GlobalPooling2DOp("gp", mode, keepdims), x, {}, dy, reference, data_format,
             reference_grads, rtol=1e-5, atol=1e-6, grad_rtol=1e-5, grad_atol=1e-6, eps=1e-3,
             entries=6)


@pytest.mark.parametrize("data_format", [CHANNELS_LAST, CHANNELS_FIRST])
@pytest.mark.parametrize("mode", ["avg", "max"])
def test_conv_global_pooling_dense_in_blocked_layout(mode, data_format):
    """After a relu conv in oneDNN's blocked layout, as in a classifier head."""
    rng = np.random.default_rng(4)
    shape = (2, 6, 6, 16) if data_format == CHANNELS_LAST else (2, 16, 6, 6)
    x = rng.normal(size=shape).astype(np.float32)
    params = {"conv/kernel": rng.normal(0, 0.2, size=(3, 3, 16, 20)).astype(np.float32),
              "conv/bias": rng.normal(0, 0.1, size=20).astype(np.float32),
              "dense/kernel": rng.normal(0, 0.3, size=(20, 4)).astype(np.float32),
              "dense/bias": np.zeros(4, np.float32)}
    from op_checker import conv2d_reference

    def reference(x64, p64):
        y = conv2d_reference(x64, p64["conv/kernel"], p64["conv/bias"], (1, 1), "same", "relu",
                             data_format)
        pooled = global_reference(y, mode, data_format, False)
        return pooled @ p64["dense/kernel"] + p64["dense/bias"]

    dy = rng.normal(size=(2, 4)).astype(np.float32)
    check_op([Conv2DOp("conv", 20, (3, 3), padding="same", activation="relu"),
              GlobalPooling2DOp("gp", mode), DenseOp("dense", 4)], x, params, dy, reference,
             data_format, rtol=1e-4, atol=1e-5, eps=1e-2, entries=6)
