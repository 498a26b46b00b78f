"""GaussianNoiseOp, GaussianDropoutOp, SpatialDropout2DOp (counter-based numba draws, oneDNN binary
mul), RescalingOp (oneDNN eltwise linear) and IdentityOp: values, gradients and statistics."""

import numpy as np
import pytest
from op_checker import CHANNELS_FIRST, CHANNELS_LAST, OpHarness, check_op

from kiln.ops.conv2d import Conv2DOp
from kiln.ops.identity import IdentityOp
from kiln.ops.noise import GaussianDropoutOp, GaussianNoiseOp, SpatialDropout2DOp
from kiln.ops.rescaling import RescalingOp

FORMATS = [CHANNELS_LAST, CHANNELS_FIRST]


@pytest.mark.parametrize("data_format", FORMATS)
def test_rescaling(data_format):
    rng = np.random.default_rng(1)
    x = rng.normal(size=(2, 3, 4, 5)).astype(np.float32)
    dy = rng.normal(size=x.shape).astype(np.float32)
    check_op(RescalingOp("r", 1 / 255.0, -0.5), x, {}, dy,
             lambda x64, p: x64 / 255.0 - 0.5, data_format,
             lambda x64, p, dy64: (dy64 / 255.0, {}), rtol=1e-6, atol=1e-7, numeric=False)


def test_identity_is_free():
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    result, harness = check_op(IdentityOp("i"), x, {}, np.ones_like(x), lambda x64, p: x64,
                               numeric=False)
    assert harness.builder.forward_calls == [] and harness.builder.backward_calls == []


def test_gaussian_noise_statistics_and_fresh_draws():
    x = np.zeros((64, 1000), np.float32)
    harness = OpHarness(GaussianNoiseOp("g", 0.5, seed=3), x)
    first = harness.forward()
    second = harness.forward()
    assert abs(first.mean()) < 0.01 and abs(first.std() - 0.5) < 0.01
    assert not np.array_equal(first, second)
    dy = np.random.default_rng(0).normal(size=x.shape).astype(np.float32)
    grad, _ = harness.backward(dy)
    np.testing.assert_array_equal(grad, dy)  # d(x + noise)/dx = 1
    again = OpHarness(GaussianNoiseOp("g", 0.5, seed=3), x).forward()
    np.testing.assert_array_equal(again, first)  # the seed fixes the sequence


@pytest.mark.parametrize("data_format", FORMATS)
def test_gaussian_dropout_statistics_and_backward(data_format):
    rng = np.random.default_rng(2)
    x = rng.uniform(1, 2, size=(8, 10, 10, 32)).astype(np.float32)
    if data_format == CHANNELS_FIRST:
        x = np.ascontiguousarray(x.transpose(0, 3, 1, 2))
    harness = OpHarness(GaussianDropoutOp("g", 0.2, seed=5), x, data_format=data_format)
    y = harness.forward()
    multiplier = y / x
    assert abs(multiplier.mean() - 1) < 0.01
    assert abs(multiplier.std() - np.sqrt(0.2 / 0.8)) < 0.01
    dy = rng.normal(size=x.shape).astype(np.float32)
    grad, _ = harness.backward(dy)
    np.testing.assert_allclose(grad, dy * multiplier, rtol=1e-4, atol=1e-5)
    assert not np.allclose(harness.forward(), y)


@pytest.mark.parametrize("data_format", FORMATS)
def test_spatial_dropout_drops_whole_channels_behind_a_conv(data_format):
    rng = np.random.default_rng(4)
    shape = (16, 6, 6, 3) if data_format == CHANNELS_LAST else (16, 3, 6, 6)
    x = rng.normal(size=shape).astype(np.float32)
    params = {"conv/kernel": rng.normal(0, 0.3, size=(3, 3, 3, 32)).astype(np.float32),
              "conv/bias": np.full(32, 3.0, np.float32)}  # outputs far from 0
    ops = [Conv2DOp("conv", 32, (3, 3), padding="same"), SpatialDropout2DOp("s", 0.25, seed=7)]
    harness = OpHarness(ops, x, params, data_format)
    y = harness.forward()
    per_channel = np.moveaxis(y, 3 if data_format == CHANNELS_LAST else 1, -1)
    dropped = np.all(per_channel == 0, axis=(1, 2))       # (N, C)
    kept = np.all(per_channel != 0, axis=(1, 2))
    assert np.all(dropped | kept)                           # whole channels, never parts
    assert abs(dropped.mean() - 0.25) < 0.06
    y2 = harness.forward()
    assert not np.array_equal(y2 == 0, y == 0)              # a new mask each step


@pytest.mark.parametrize("data_format", FORMATS)
def test_spatial_dropout_backward_uses_the_forward_mask(data_format):
    rng = np.random.default_rng(6)
    x = rng.uniform(1, 2, size=(8, 4, 4, 8)).astype(np.float32)
    harness = OpHarness(SpatialDropout2DOp("s", 0.5, seed=1), x, data_format=data_format)
    y = harness.forward()
    dy = rng.normal(size=x.shape).astype(np.float32)
    grad, _ = harness.backward(dy)
    np.testing.assert_allclose(grad, dy * (y / x), rtol=1e-6)
    assert set(np.unique(np.round(y / x, 5))) == {0.0, 2.0}


@pytest.mark.parametrize("op", [GaussianNoiseOp("a", 1.0), GaussianDropoutOp("b", 0.5),
                                SpatialDropout2DOp("c", 0.5)])
def test_noise_is_identity_in_inference(op):
    x = np.random.default_rng(0).normal(size=(2, 3, 4, 5)).astype(np.float32)
    harness = OpHarness(op, x, training=False)
    np.testing.assert_array_equal(harness.forward(), x)
