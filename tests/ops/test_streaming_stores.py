"""kiln.ops.streaming_stores and the forward kernel's streamed path: the run loop against
numpy on odd lengths, unaligned heads and tails and every lane period, with and without the
relu; ChannelAffineOp / BroadcastBinaryOp forwards of outputs above STREAMING_BYTES in nhwc and
nchw (the numba kernel, not oneDNN), including an output that starts off a cache line; and
that the compiled loop does emit streaming stores."""

import platform

import numpy as np
import pytest
from op_checker import CHANNELS_FIRST, CHANNELS_LAST, OpHarness

from kiln.binding import constants as dnnl
from kiln.binding.memory import MemoryDesc, aligned_bytes
from kiln.ops.broadcast import BroadcastBinaryOp
from kiln.ops.channel_affine import ChannelAffineOp, kernel_iteration
from kiln.ops.channel_affine_kernels import forward_kernel
from kiln.ops.numba_config import SERIAL, njit
from kiln.ops.streaming_stores import (
    STREAMING_BYTES,
    VECTOR,
    fill_lanes,
    lane_period,
    stream_affine_run,
    streams,
)


def aligned_floats(count):
    """A float32 array on a 64-byte boundary (as kiln's buffers)."""
    return aligned_bytes(4 * count).view(np.float32)[:count]


def run_reference(x, a, count, scale, shift, first, channels, relu):
    channel = first + np.arange(count) % channels
    value = x[a:a + count].astype(np.float64) * scale[channel] + shift[channel]
    return np.maximum(value, 0.0) if relu else value


@pytest.mark.parametrize("channels", [1, 3, 16, 64, 97])
@pytest.mark.parametrize("relu", [False, True])
def test_run_matches_numpy_on_unaligned_heads_and_tails(channels, relu):
    rng = np.random.default_rng(channels)
    size = 700
    x = aligned_floats(size)
    x[:] = rng.normal(size=size)
    scale = rng.normal(size=channels + 5).astype(np.float32)
    shift = rng.normal(size=channels + 5).astype(np.float32)
    period = lane_period(channels)
    assert period % channels == 0 and period >= VECTOR
    lane_scale = np.empty(period + VECTOR, np.float32)
    lane_shift = np.empty(period + VECTOR, np.float32)
    for first in (0, 5):
        fill_lanes(lane_scale, scale, first, channels)
        fill_lanes(lane_shift, shift, first, channels)
        for a, count in ((0, 0), (0, 7), (0, 16), (3, 13), (3, 14), (1, 64), (16, 513),
                         (7, 600), (0, 700)):
            out = aligned_floats(size)
            out[:] = -7.0
            stream_affine_run(out, x, a, count, lane_scale, lane_shift, period, relu)
            expected = run_reference(x, a, count, scale, shift, first, channels, relu)
            np.testing.assert_allclose(out[a:a + count], expected, rtol=1e-6, atol=1e-6)
            assert (out[:a] == -7.0).all() and (out[a + count:] == -7.0).all()


def test_run_on_an_array_off_a_float_boundary():
    """No vector store is aligned then: every element is written scalar."""
    storage = aligned_bytes(4 * 100 + 64)
    out = np.frombuffer(storage.data, np.float32, 100, offset=2)
    x = np.arange(100, dtype=np.float32)
    lanes = np.ones(2 * VECTOR, np.float32)
    stream_affine_run(out, x, 0, 100, lanes, lanes, VECTOR, False)
    np.testing.assert_array_equal(out, x + 1.0)


@pytest.mark.parametrize("relu", [False, True])
def test_nan_and_infinities_as_the_scalar_loops(relu):
    """The vectors, the scalar head and tail of a run and the unstreamed kernel agree on nan
    (kept, also by the relu: numba's max) and on the infinities."""
    x = aligned_floats(40)
    x[:] = np.tile(np.array([np.nan, np.inf, -np.inf, -1.0], np.float32), 10)
    lanes_scale, lanes_shift = np.ones(2 * VECTOR, np.float32), np.zeros(2 * VECTOR, np.float32)
    streamed = aligned_floats(41)[1:]  # a scalar head of 15 floats, a vector, a scalar tail
    stream_affine_run(streamed, x, 0, 40, lanes_scale, lanes_shift, VECTOR, relu)
    desc = MemoryDesc.with_tag((1, 4, 2, 5), dnnl.f32, dnnl.abcd)
    shape, strides = kernel_iteration(desc, MemoryDesc.with_tag((1, 4, 1, 1), dnnl.f32,
                                                                dnnl.abcd))
    unstreamed = np.empty(40, np.float32)
    forward_kernel(unstreamed, x, np.ones(4, np.float32), np.zeros(4, np.float32), relu, shape,
                   strides)
    expected = np.maximum(x, 0.0) if relu else x  # np.maximum keeps nan
    np.testing.assert_array_equal(streamed, expected)
    np.testing.assert_array_equal(unstreamed, expected)


def test_streams_from_the_threshold_on():
    assert streams(STREAMING_BYTES) and streams(4 * 128 * 64 * 24 * 24)
    assert not streams(STREAMING_BYTES - 1) and not streams(4 * 8 * 64 * 24 * 24)


@pytest.mark.skipif(platform.machine() not in ("x86_64", "AMD64"), reason="x86 instructions")
def test_the_loop_emits_streaming_stores():
    """A fresh, uncached compilation of the run loop (a cached one cannot be inspected)."""
    fresh = njit(**{**SERIAL, "cache": False})(stream_affine_run.py_func)
    out, x, lanes = np.zeros(64, np.float32), np.ones(64, np.float32), np.ones(32, np.float32)
    fresh(out, x, 0, 64, lanes, lanes, VECTOR, False)
    assm = "\n".join(fresh.inspect_asm().values())
    assert "movntps" in assm
    np.testing.assert_array_equal(out, 2.0)


# an output above STREAMING_BYTES with odd sizes: lines of 101 floats (nhwc), 23 * 29 (nchw)
LARGE = (65, 101, 23, 29)


@pytest.mark.parametrize("layout", ["nhwc", "nchw"])
@pytest.mark.parametrize("relu", [False, True])
@pytest.mark.parametrize("offset", [0, 3])
def test_forward_kernel_streams_a_large_output(layout, relu, offset):
    """offset: the output (and input) starting 3 floats past a cache line."""
    n, c, h, w = LARGE
    size = n * c * h * w
    assert streams(4 * size)
    tag = dnnl.acdb if layout == "nhwc" else dnnl.abcd
    desc = MemoryDesc.with_tag(LARGE, dnnl.f32, tag)
    shape, strides = kernel_iteration(desc, MemoryDesc.with_tag((1, c, 1, 1), dnnl.f32,
                                                                dnnl.abcd))
    rng = np.random.default_rng(1)
    x = aligned_floats(size + offset)[offset:]
    x[:] = rng.normal(size=size)
    out = aligned_floats(size + offset)[offset:]
    scale = rng.normal(size=c).astype(np.float32)
    shift = rng.normal(size=c).astype(np.float32)
    forward_kernel(out, x, scale, shift, relu, shape, strides)
    if layout == "nhwc":
        expected = x.reshape(n, h, w, c) * scale + shift
    else:
        expected = x.reshape(n, c, h, w) * scale[:, None, None] + shift[:, None, None]
    if relu:
        expected = np.maximum(expected, 0.0)
    np.testing.assert_allclose(out, expected.reshape(-1), rtol=1e-6, atol=1e-6)


def keras_input(rng, data_format):
    n, c, h, w = LARGE
    shape = (n, h, w, c) if data_format == CHANNELS_LAST else (n, c, h, w)
    return rng.normal(size=shape).astype(np.float32)


def per_channel(values, data_format):
    return values if data_format == CHANNELS_LAST else values[:, None, None]


@pytest.mark.parametrize("data_format", [CHANNELS_LAST, CHANNELS_FIRST])
def test_large_per_channel_bias_add_runs_the_streaming_kernel(data_format):
    rng = np.random.default_rng(2)
    c = LARGE[1]
    tag = dnnl.acdb if data_format == CHANNELS_LAST else dnnl.abcd
    op = BroadcastBinaryOp("bias", "add", ("bias", (1, c, 1, 1), tag))
    x = keras_input(rng, data_format)
    bias = rng.normal(size=c).astype(np.float32)
    harness = OpHarness(op, x, {"bias/bias": per_channel(bias, data_format)}, data_format)
    calls = [call for call in harness.forward_calls if call.label == "bias forward"]
    assert [call.function for call in calls] == [forward_kernel]
    result = harness.run(x, np.ones_like(x))
    np.testing.assert_allclose(result.output, x + per_channel(bias, data_format), rtol=1e-6,
                               atol=1e-6)


@pytest.mark.parametrize("data_format", [CHANNELS_LAST, CHANNELS_FIRST])
def test_large_channel_affine_with_relu_runs_the_streaming_kernel(data_format):
    rng = np.random.default_rng(3)
    c = LARGE[1]
    tag = dnnl.acdb if data_format == CHANNELS_LAST else dnnl.abcd
    op = ChannelAffineOp("affine", scale=("scale", (1, c, 1, 1), tag),
                         shift=("bias", (1, c, 1, 1), tag), activation="relu")
    x = keras_input(rng, data_format)
    scale = rng.normal(size=c).astype(np.float32)
    bias = rng.normal(size=c).astype(np.float32)
    harness = OpHarness(op, x, {"affine/scale": per_channel(scale, data_format),
                                "affine/bias": per_channel(bias, data_format)}, data_format)
    calls = [call for call in harness.forward_calls if call.label == "affine forward"]
    assert [call.function for call in calls] == [forward_kernel]
    result = harness.run(x, np.ones_like(x))
    expected = np.maximum(x * per_channel(scale, data_format)
                          + per_channel(bias, data_format), 0.0)
    np.testing.assert_allclose(result.output, expected, rtol=1e-5, atol=1e-6)
