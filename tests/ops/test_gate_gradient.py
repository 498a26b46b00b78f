"""gate_gradient_kernel (the gate's gradient of a bf16 squeeze-and-excitation product): the sum
over rows and columns of dy * x, read from the bf16 bits in a blocked (nChw16c, channels padded
to the block) or an nhwc layout, against numpy."""

import numpy as np
import pytest

from kiln.binding import constants as dnnl
from kiln.binding.memory import MemoryDesc
from kiln.ops.depthwise_weights import channel_walk
from kiln.ops.gate_gradient import applies, gate_gradient_kernel


def bf16_bits(values):
    return (values.astype(np.float32).view(np.uint32) >> 16).astype(np.uint16)


def widened(bits):
    return (bits.astype(np.uint32) << 16).view(np.float32)


@pytest.mark.parametrize("tag", [dnnl.aBcd16b, dnnl.acdb])
def test_gate_gradient_kernel_against_numpy(tag):
    n, c, h, w = 3, 24, 5, 4
    rng = np.random.default_rng(2)
    dy, x = (widened(bf16_bits(rng.normal(size=(n, c, h, w)))) for _ in range(2))
    desc = MemoryDesc.with_tag((n, c, h, w), dnnl.bf16, tag)
    lanes, blocks, strides = channel_walk(desc)
    if tag == dnnl.acdb:
        layout = lambda a: a.transpose(0, 2, 3, 1).reshape(-1)  # noqa: E731
    else:  # (n, c / 16, h, w, 16), the padded lanes zero
        def layout(a):
            padded = np.zeros((n, blocks * lanes, h, w), np.float32)
            padded[:, :c] = a
            return padded.reshape(n, blocks, lanes, h, w).transpose(0, 1, 3, 4, 2).reshape(-1)
    out = np.full(n * c, np.nan, np.float32)
    gate_gradient_kernel(bf16_bits(layout(dy)), bf16_bits(layout(x)),
                         np.array([n, blocks, lanes, c, h, w], np.int64),
                         np.array(strides, np.int64), out)
    expected = (dy.astype(np.float64) * x).sum(axis=(2, 3)).reshape(-1)
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-5)


def test_only_a_bf16_per_channel_gate_product_applies():
    desc = MemoryDesc.with_tag((2, 32, 7, 7), dnnl.bf16, dnnl.aBcd16b)
    assert applies(desc, (2, 32, 1, 1), "multiply")
    assert not applies(desc, (2, 32, 1, 1), "add")
    assert not applies(desc, (1, 32, 1, 1), "multiply")           # one gate for all images
    assert not applies(MemoryDesc.with_tag((2, 32, 7, 7), dnnl.f32, dnnl.aBcd16b),
                       (2, 32, 1, 1), "multiply")
