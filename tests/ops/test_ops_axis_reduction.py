"""AxisReductionOp (keras.ops sum / mean with keepdims inside a model): forward against numpy,
gradient against the broadcast of dy and central differences, over several axis sets, in both
data formats and on 2D tensors."""

import numpy as np
import pytest
from op_checker import CHANNELS_FIRST, CHANNELS_LAST, check_op

from kiln.ops.axis_reduction import AxisReductionOp

# logical axes of (N, C, H, W) -> Keras axes of the test's array in each format
KERAS_AXES = {CHANNELS_LAST: {1: 3, 2: 1, 3: 2}, CHANNELS_FIRST: {1: 1, 2: 2, 3: 3}}


@pytest.mark.parametrize("data_format", [CHANNELS_LAST, CHANNELS_FIRST])
@pytest.mark.parametrize("mode", ["sum", "mean", "max", "min"])
@pytest.mark.parametrize("axes", [(1,), (2, 3), (1, 3)])
def test_image_reduction(axes, mode, data_format):
    rng = np.random.default_rng(4)
    shape = (2, 4, 3, 5) if data_format == CHANNELS_LAST else (2, 5, 4, 3)
    x = rng.normal(size=shape).astype(np.float32)
    keras_axes = tuple(KERAS_AXES[data_format][a] for a in axes)
    reduce = {"sum": np.sum, "mean": np.mean, "max": np.max, "min": np.min}[mode]
    count = np.prod([shape[a] for a in keras_axes])
    dy = rng.normal(size=reduce(x, axis=keras_axes, keepdims=True).shape).astype(np.float32)

    def gradient(x64, p, dy64):
        spread = np.broadcast_to(dy64 / (count if mode == "mean" else 1), x64.shape)
        if mode in ("max", "min"):  # to the chosen position only
            return spread * (x64 == reduce(x64, axis=keras_axes, keepdims=True)), {}
        return spread, {}

    check_op(AxisReductionOp("r", mode, axes), x, {}, dy,
             lambda x64, p: reduce(x64, axis=keras_axes, keepdims=True), data_format,
             gradient, rtol=1e-5, atol=1e-6)


def test_features_of_a_matrix():
    rng = np.random.default_rng(5)
    x = rng.normal(size=(3, 7)).astype(np.float32)
    dy = rng.normal(size=(3, 1)).astype(np.float32)
    check_op(AxisReductionOp("r", "mean", (1,)), x, {}, dy,
             lambda x64, p: x64.mean(axis=1, keepdims=True), CHANNELS_LAST,
             lambda x64, p, dy64: (np.broadcast_to(dy64 / 7, x64.shape), {}),
             rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("mode", ["sum", "mean"])
@pytest.mark.parametrize("shape", [(3, 7), (2, 4, 3, 5)])
def test_over_the_whole_batch(shape, mode):
    """A loss reduced over every axis, the batch included: one value (dims of 1s)."""
    rng = np.random.default_rng(6)
    x = rng.normal(size=shape).astype(np.float32)
    dy = rng.normal(size=(1,) * len(shape)).astype(np.float32)
    reduce = np.sum if mode == "sum" else np.mean
    scale = 1 if mode == "sum" else x.size
    op = AxisReductionOp("r", mode, range(1, len(shape)), over_batch=True)
    assert op.output_dims((None, *shape[1:])) == (1,) * len(shape)
    check_op(op, x, {}, dy, lambda x64, p: reduce(x64, keepdims=True), CHANNELS_LAST,
             lambda x64, p, dy64: (np.broadcast_to(dy64 / scale, x64.shape), {}),
             rtol=1e-5, atol=1e-6)


def test_bad_arguments_are_named():
    with pytest.raises(ValueError, match="AxisReduction 'r': argument mode"):
        AxisReductionOp("r", "prod", (1,))
    with pytest.raises(ValueError, match="AxisReduction 'r': argument axes"):
        AxisReductionOp("r", "sum", (0, 1))
    with pytest.raises(ValueError, match="AxisReduction 'r': a reduction over the batch"):
        AxisReductionOp("r", "sum", (1,), over_batch=True).output_dims((4, 3, 2))


@pytest.mark.parametrize("data_format", [CHANNELS_LAST, CHANNELS_FIRST])
@pytest.mark.parametrize("mode", ["mean", "sum", "max"])
def test_over_an_axis_of_size_one(mode, data_format):
    """A mean over the one channel of an image (keras.losses.binary_crossentropy of a
    (batch, H, W, 1) output): the identity, which oneDNN's reduction refuses to plan."""
    rng = np.random.default_rng(7)
    shape = (2, 4, 3, 1) if data_format == CHANNELS_LAST else (2, 1, 4, 3)
    x = rng.normal(size=shape).astype(np.float32)
    dy = rng.normal(size=shape).astype(np.float32)
    check_op(AxisReductionOp("r", mode, (1,)), x, {}, dy, lambda x64, p: x64, data_format,
             lambda x64, p, dy64: (dy64, {}), rtol=1e-6, atol=1e-7)
