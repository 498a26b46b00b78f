"""kiln.ops.max_pool_dropout: the fused 2x2 max pooling + dropout kernels against numpy, and
whole models trained with the fused op against the same models run op by op."""

import numpy as np
import pytest

from kiln import keras
from kiln.graph import rules
from kiln.keras.layers import Conv2D, Dense, Dropout, Flatten, MaxPooling2D
from kiln.ops.dropout import CHUNK, dropout_forward_kernel, keep_scratch, keep_threshold
from kiln.ops.max_pool_dropout import (
    MaxPoolDropoutOp,
    max_pool_dropout_backward_kernel,
    max_pool_dropout_forward_kernel,
)


def to_slabs(x_nchw, lanes):
    """(N, C, H, W) -> flat memory in slabs of rows x columns x lanes."""
    n, c, h, w = x_nchw.shape
    return np.ascontiguousarray(
        x_nchw.reshape(n, c // lanes, lanes, h, w).transpose(0, 1, 3, 4, 2)).ravel()


def from_slabs(flat, shape, lanes):
    n, c, h, w = shape
    return flat.reshape(n, c // lanes, h, w, lanes).transpose(0, 1, 4, 2, 3).reshape(shape)


def pool_reference(x):
    """Max and first-argmax over 2x2 windows (odd last row/column left out), in float64."""
    n, c, h, w = x.shape
    oh, ow = h // 2, w // 2
    windows = x[:, :, :2 * oh, :2 * ow].reshape(n, c, oh, 2, ow, 2)
    windows = windows.transpose(0, 1, 2, 4, 3, 5).reshape(n, c, oh, ow, 4)
    return windows.max(-1), windows.argmax(-1)


def unpool_reference(grad, where, shape):
    n, c, h, w = shape
    oh, ow = grad.shape[2:]
    out = np.zeros((n, c, oh, ow, 4))
    np.put_along_axis(out, where[..., None], grad[..., None], -1)
    out = out.reshape(n, c, oh, ow, 2, 2).transpose(0, 1, 2, 4, 3, 5)
    full = np.zeros(shape)
    full[:, :, :2 * oh, :2 * ow] = out.reshape(n, c, 2 * oh, 2 * ow)
    return full


@pytest.mark.parametrize("lanes_of", ["blocked16", "channels_contiguous", "planar"])
@pytest.mark.parametrize("shape", [(3, 32, 6, 8), (2, 16, 7, 5), (4, 32, 13, 13)])
@pytest.mark.parametrize("relu", [True, False])
def test_kernels_against_numpy(lanes_of, shape, relu):
    n, c, h, w = shape
    lanes = {"blocked16": 16, "channels_contiguous": c, "planar": 1}[lanes_of]
    rng = np.random.default_rng(sum(shape))
    x = rng.normal(size=shape).astype(np.float32)
    if relu:
        x = np.maximum(x, 0)  # what a relu convolution hands the pooling (ties at 0)
    rate, seed = 0.25, 11
    scale = np.float32(1 / (1 - rate))
    out_shape = (n, c, h // 2, w // 2)
    y = np.zeros(int(np.prod(out_shape)), np.float32)
    codes = np.zeros(y.size, np.uint8)
    geometry = np.array([n * c // lanes, lanes, h, w, h // 2, w // 2], np.int64)
    counter = np.array([seed, 5], np.uint64)
    threshold = keep_threshold(rate)
    max_pool_dropout_forward_kernel(to_slabs(x, lanes), y, codes, geometry, threshold, scale,
                                    counter, keep_scratch((w // 2) * lanes))
    assert counter[1] == 6  # the step advances, as in Dropout

    # the mask is Dropout's: the same hash of the same memory index and step
    ones = np.ones_like(y)
    mask = np.zeros(y.size, np.uint8)
    dropout_forward_kernel(ones, np.empty_like(ones), mask, threshold, scale,
                           np.array([seed, 5], np.uint64), keep_scratch(CHUNK))
    kept = from_slabs(mask.astype(np.float64), out_shape, lanes)
    assert 0.6 < kept.mean() < 0.9
    best, where = pool_reference(x.astype(np.float64))
    output = from_slabs(y, out_shape, lanes)
    np.testing.assert_allclose(output, best * kept * scale, rtol=1e-6)
    code = from_slabs(codes, out_shape, lanes)
    assert np.array_equal((code >> 2) & 1, kept)
    assert np.array_equal(code & 3, where)
    assert np.array_equal(code >> 3, best > 0)

    grad = rng.normal(size=out_shape).astype(np.float32)
    grad_in = np.full(x.size, np.nan, np.float32)  # every element must be written
    max_pool_dropout_backward_kernel(to_slabs(grad, lanes), codes, grad_in, geometry, scale,
                                     np.int32(relu))
    passes = kept * ((best > 0) if relu else 1)
    expected = unpool_reference(grad * passes * scale, where, shape)
    np.testing.assert_allclose(from_slabs(grad_in, shape, lanes), expected, rtol=1e-6,
                               atol=1e-7)


def model(data_format, filters, size, fused):
    keras.initializers.set_random_seed(3)
    shape = (size, size, 2) if data_format == "channels_last" else (2, size, size)
    net = keras.Sequential([
        Conv2D(filters, 3, activation="relu", input_shape=shape, data_format=data_format),
        MaxPooling2D(data_format=data_format), Dropout(0.5, seed=21),
        Flatten(data_format=data_format), Dense(5, activation="softmax")])
    net.compile(loss="categorical_crossentropy", optimizer=keras.optimizers.SGD(0.05))
    net.build()
    if not fused:
        # plan it without the pooling + dropout rule
        net._plan_rules = rules.without("max pool + dropout")
    return net


@pytest.mark.parametrize("data_format", ["channels_last", "channels_first"])
@pytest.mark.parametrize("filters,size", [(16, 10), (32, 11), (20, 10)])
def test_fused_op_trains_exactly_like_pool_then_dropout(data_format, filters, size):
    rng = np.random.default_rng(filters + size)
    shape = (24, size, size, 2) if data_format == "channels_last" else (24, 2, size, size)
    x = rng.normal(size=shape).astype(np.float32)
    y = np.eye(5, dtype=np.float32)[rng.integers(0, 5, 24)]
    fused, separate = model(data_format, filters, size, True), model(data_format, filters,
                                                                     size, False)
    assert any(isinstance(op, MaxPoolDropoutOp) for op in fused.ops)
    assert not any(isinstance(op, MaxPoolDropoutOp) for op in separate.ops)
    separate.set_weights(fused.get_weights())
    start = [w.copy() for w in fused.get_weights()]
    history = []
    for net in (fused, separate):
        history.append(net.fit(x, y, batch_size=8, epochs=2, shuffle=False, verbose=0)
                       .history["loss"])
    np.testing.assert_allclose(history[0], history[1], rtol=1e-6)
    for a, b, before in zip(fused.get_weights(), separate.get_weights(), start):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-7)
        assert not np.allclose(a, before)  # both really trained
