"""BroadcastDropoutOp (Dropout with a noise_shape): one draw per entry of the mask, shared
along the axes where the noise shape is 1, in any layout; backward reuses the forward's mask."""

import numpy as np
import pytest
from op_checker import CHANNELS_FIRST, CHANNELS_LAST, OpHarness

from kiln.ops.conv2d import Conv2DOp
from kiln.ops.noise import BroadcastDropoutOp

FORMATS = [CHANNELS_LAST, CHANNELS_FIRST]


@pytest.mark.parametrize("data_format", FORMATS)
def test_whole_samples_are_dropped_behind_a_conv(data_format):
    rng = np.random.default_rng(4)
    shape = (64, 5, 5, 3) if data_format == CHANNELS_LAST else (64, 3, 5, 5)
    x = rng.normal(size=shape).astype(np.float32)
    params = {"conv/kernel": rng.normal(0, 0.3, size=(3, 3, 3, 16)).astype(np.float32),
              "conv/bias": np.full(16, 3.0, np.float32)}  # outputs far from 0
    ops = [Conv2DOp("conv", 16, (3, 3), padding="same"), BroadcastDropoutOp("d", 0.25, 7, (0,))]
    harness = OpHarness(ops, x, params, data_format)
    y = harness.forward()
    flat = y.reshape(len(y), -1)
    dropped, kept = np.all(flat == 0, axis=1), np.all(flat != 0, axis=1)
    assert np.all(dropped | kept)                 # whole samples, never parts
    assert 0.1 < dropped.mean() < 0.4
    reference = OpHarness(ops[:1], x, params, data_format).forward()
    np.testing.assert_allclose(y[kept], reference[kept] / 0.75, rtol=1e-5, atol=1e-5)
    assert not np.array_equal(harness.forward() == 0, y == 0)  # a new mask each step


@pytest.mark.parametrize("data_format", FORMATS)
def test_mask_per_sample_and_channel_and_backward(data_format):
    rng = np.random.default_rng(6)
    x = rng.uniform(1, 2, size=(8, 4, 4, 6)).astype(np.float32)
    if data_format == CHANNELS_FIRST:
        x = np.ascontiguousarray(x.transpose(0, 3, 1, 2))
    harness = OpHarness(BroadcastDropoutOp("d", 0.5, 1, (0, 1)), x, data_format=data_format)
    y = harness.forward()
    ratio = np.round(y / x, 5)
    assert set(np.unique(ratio)) == {0.0, 2.0}
    spatial = (1, 2) if data_format == CHANNELS_LAST else (2, 3)
    assert np.all(ratio.min(axis=spatial) == ratio.max(axis=spatial))  # one draw per (n, c)
    dy = rng.normal(size=x.shape).astype(np.float32)
    grad, _ = harness.backward(dy)
    np.testing.assert_allclose(grad, dy * (y / x), rtol=1e-6)


def test_identity_in_inference():
    x = np.random.default_rng(0).normal(size=(2, 3, 4, 5)).astype(np.float32)
    harness = OpHarness(BroadcastDropoutOp("d", 0.5), x, training=False)
    np.testing.assert_array_equal(harness.forward(), x)
