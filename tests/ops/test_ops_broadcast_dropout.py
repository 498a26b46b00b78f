"""BroadcastDropoutOp (Dropout with a noise_shape): one draw per entry of the mask, shared
along the axes where the noise shape is 1, in any layout; backward reuses the forward's mask.
Where the mask varies along the layout's outermost axes (whole samples, in every layout) it is
applied by outer_scale's kernels, both ways."""

import numpy as np
import pytest
from op_checker import CHANNELS_FIRST, CHANNELS_LAST, OpHarness

from kiln.binding import constants as dnnl
from kiln.binding.memory import MemoryDesc
from kiln.ops.broadcast_kernels import elementwise_kernel
from kiln.ops.conv2d import Conv2DOp
from kiln.ops.noise import BroadcastDropoutOp
from kiln.ops.outer_scale import outer_run, outer_scale_bf16, outer_scale_f32

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


# -- the fast path: outer_scale's kernel (oneDNN's binary runs its reference kernel there) --

def kernels_of(calls):
    return [getattr(call, "function", None) for call in calls]


def per_sample_harness(data_format, channels):
    """A conv (blocked output; 24 channels pad to a block of 16) then per-sample dropout."""
    rng = np.random.default_rng(5)
    shape = (16, 6, 6, 3) if data_format == CHANNELS_LAST else (16, 3, 6, 6)
    x = rng.normal(size=shape).astype(np.float32)
    params = {"conv/kernel": rng.normal(0, 0.3, size=(3, 3, 3, channels)).astype(np.float32),
              "conv/bias": np.full(channels, 2.0, np.float32)}
    ops = [Conv2DOp("conv", channels, (3, 3), padding="same"),
           BroadcastDropoutOp("d", 0.5, 11, (0,))]
    return OpHarness(ops, x, params, data_format), OpHarness(ops[:1], x, params, data_format)


@pytest.mark.parametrize("data_format", FORMATS)
@pytest.mark.parametrize("channels", [16, 24])
def test_per_sample_dropout_runs_the_outer_scale_kernel_both_ways(data_format, channels):
    harness, conv_only = per_sample_harness(data_format, channels)
    assert outer_scale_f32 in kernels_of(harness.forward_calls)
    assert outer_scale_f32 in kernels_of(harness.backward_calls)
    assert not any("binary" in call.label for call in harness.forward_calls)
    y, reference = harness.forward(), conv_only.forward()
    factor = np.round(y / reference, 5).reshape(len(y), -1)
    assert np.all(factor.min(axis=1) == factor.max(axis=1))      # one draw per sample
    assert set(np.unique(factor)) == {0.0, 2.0}
    dy = np.random.default_rng(8).normal(size=y.shape).astype(np.float32)
    _, grads = harness.backward(dy)
    _, conv_grads = conv_only.backward(dy * (y / reference))      # the same mask, backward
    for name, grad in grads.items():
        np.testing.assert_allclose(grad, conv_grads[name], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("data_format, kernel", [(CHANNELS_FIRST, outer_scale_f32),
                                                  (CHANNELS_LAST, elementwise_kernel)])
def test_a_mask_per_sample_and_channel_runs_a_numba_kernel(data_format, kernel):
    """outer_scale's where the mask's axes are the outermost (nchw), else the broadcasting
    elementwise kernel (nhwc), both ways: never oneDNN's reference binary."""
    x = np.ones((4, 3, 5, 5) if data_format == CHANNELS_FIRST else (4, 5, 5, 3), np.float32)
    harness = OpHarness(BroadcastDropoutOp("d", 0.5, 2, (0, 1)), x, data_format=data_format)
    assert kernel in kernels_of(harness.forward_calls)
    assert kernel in kernels_of(harness.backward_calls)


def test_outer_run_of_layouts():
    dims = (2, 24, 5, 5)
    blocked = MemoryDesc.with_tag(dims, dnnl.f32, dnnl.aBcd16b)
    assert outer_run(blocked, dims, (0,)) == 32 * 25             # the padding belongs to it
    assert outer_run(blocked, dims, (0, 1)) is None              # C is blocked
    nchw, nhwc = (MemoryDesc.with_tag(dims, dnnl.f32, tag) for tag in (dnnl.abcd, dnnl.acdb))
    assert outer_run(nchw, dims, (0, 1)) == 25
    assert outer_run(nhwc, dims, (0, 1)) is None
    assert outer_run(nhwc, dims, (0, 2)) == 5 * 24
    assert outer_run(MemoryDesc.with_tag(dims, dnnl.bf16, dnnl.acdb), dims, (0,)) == 600
    assert outer_run(nhwc, dims, ()) == 2 * 600                  # one draw for everything


def test_outer_scale_kernels_against_numpy():
    rng = np.random.default_rng(3)
    x = rng.normal(size=3 * 40000).astype(np.float32)
    scales = np.array([0.0, 2.0, -1.5], np.float32)
    y = np.empty_like(x)
    outer_scale_f32(x, y, scales, 40000)
    np.testing.assert_array_equal(y, (x.reshape(3, -1) * scales[:, None]).reshape(-1))
    bits = (x.view(np.uint32) >> 16).astype(np.uint16)         # x truncated to bf16
    out = np.empty_like(bits)
    outer_scale_bf16(bits, out, scales, 40000)
    wide = (bits.astype(np.uint32) << 16).view(np.float32)
    expected = (wide.reshape(3, -1) * scales[:, None]).reshape(-1)
    got = (out.astype(np.uint32) << 16).view(np.float32)
    np.testing.assert_allclose(got, expected, rtol=2 ** -8)      # rounded to bf16
    exact = expected.view(np.uint32) & 0xFFFF == 0
    np.testing.assert_array_equal(got[exact], expected[exact])
