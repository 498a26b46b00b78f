"""RandomGrayscaleOp and MixOp (MixUp, CutMix, RandomErasing) in training plans: a given draw
transforms the images as Keras's formulas (and keras.ops.image.rgb_to_grayscale) do, the draws
follow Keras's distributions, the backward is the transpose, a seed fixes the sequence."""

import os

import numpy as np
import pytest
from op_checker import CHANNELS_FIRST, CHANNELS_LAST, OpHarness
from test_image_ops import as_nhwc, check_transpose, images

from kiln.ops.image_grayscale import RandomGrayscaleOp
from kiln.ops.image_mix import MixOp

os.environ.setdefault("KERAS_BACKEND", "jax")
keras = pytest.importorskip("keras")


@pytest.mark.parametrize("data_format", [CHANNELS_LAST, CHANNELS_FIRST])
def test_grayscale(data_format):
    x = images((400, 3, 4, 3), data_format)
    op = RandomGrayscaleOp("g", 0.3, seed=2)
    harness = OpHarness(op, x, data_format=data_format)
    y = as_nhwc(harness.forward(), data_format)
    source = as_nhwc(x, data_format)
    gray = op.uniforms[:, 0] < 0.3
    assert abs(gray.mean() - 0.3) < 0.06
    expected = np.asarray(keras.ops.image.rgb_to_grayscale(source[gray]))
    np.testing.assert_allclose(y[gray], np.repeat(expected, 3, axis=-1), rtol=1e-6, atol=1e-6)
    np.testing.assert_array_equal(y[~gray], source[~gray])
    check_transpose(harness, x)


def mix_harness(kind, params, x, **options):
    op = MixOp("m", kind, params, seed=3, **options)
    return op, OpHarness(op, x)


def test_mixup():
    x = images((500, 3, 2, 2), CHANNELS_LAST)
    op, harness = mix_harness("MixUp", (0.4,), x)
    y = harness.forward()
    assert sorted(op.perm) == list(range(500)) and np.any(op.perm != np.arange(500))
    w = op.weights[:, None, None, None]
    np.testing.assert_allclose(y, w * x + (1 - w) * x[op.perm], rtol=1e-5, atol=1e-6)
    # Beta(a, a): mean 1/2, variance 1 / (4 (2a + 1))
    assert abs(op.weights.mean() - 0.5) < 0.03
    assert abs(op.weights.var() - 1 / (4 * 1.8)) < 0.02
    check_transpose(harness, x)


def box_masks(op, h, w):
    rows, columns = np.arange(h)[None, :, None], np.arange(w)[None, None, :]
    x0, x1, y0, y1 = (op.boxes[:, i, None, None] for i in range(4))
    return (columns >= x0) & (columns < x1) & (rows >= y0) & (rows < y1)


def test_cutmix():
    x = images((400, 8, 10, 2), CHANNELS_LAST)
    op, harness = mix_harness("CutMix", (0.0, 1.0), x)
    y = harness.forward()
    mask = box_masks(op, 8, 10)[..., None]
    np.testing.assert_array_equal(y, np.where(mask, x[op.perm], x))
    side = np.sqrt(1 - op.weights)
    np.testing.assert_allclose(op.boxes[:, 1] - op.boxes[:, 0], side * 10, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(op.boxes[:, 3] - op.boxes[:, 2], side * 8, rtol=1e-5, atol=1e-5)
    assert op.boxes[:, 0].min() >= 0 and op.boxes[:, 1].max() <= 10 + 1e-5
    assert abs(op.weights.mean() - 0.5) < 0.05  # Beta(a, a) is symmetric
    check_transpose(harness, x)


@pytest.mark.parametrize("fill_value", [None, 0.25, (10.0, 0.5, -1.0)])
def test_random_erasing(fill_value):
    x = images((600, 8, 10, 3), CHANNELS_LAST)
    op, harness = mix_harness("RandomErasing", (0.2, 0.6, 0.1, 0.4), x, fill_value=fill_value,
                              value_range=(0, 1))
    y = harness.forward()
    erased = box_masks(op, 8, 10) & op.apply[:, None, None]
    np.testing.assert_array_equal(y[~erased], x[~erased])
    assert abs(op.apply.mean() - 0.4) < 0.06  # probability U(0.2, 0.6) has mean 0.4
    side_ratios = (op.boxes[:, 1] - op.boxes[:, 0]) / 10
    assert 0.1 - 1e-6 <= side_ratios.min() ** 2 and side_ratios.max() ** 2 <= 0.4 + 1e-6
    inside = y[erased]
    if fill_value is None:  # normal * 1, clipped to [0, 1]: half exactly 0
        assert abs(np.mean(inside == 0) - 0.5) < 0.05 and inside.max() <= 1
    elif fill_value == 0.25:
        assert np.all(inside == 0.25)
    else:
        np.testing.assert_array_equal(np.unique(inside), [0.0, 0.5, 1.0])
    dy = np.ones_like(y)
    grad, _ = harness.backward(dy)
    expected = np.broadcast_to(np.where(erased[..., None], 0.0, 1.0), y.shape)
    np.testing.assert_array_equal(grad, expected)  # no gradient through the erased box


@pytest.mark.parametrize("kind,params", [("MixUp", (0.3,)), ("CutMix", (0.0, 1.0)),
                                         ("RandomErasing", (1.0, 1.0, 0.1, 0.3))])
def test_mix_draws_are_seeded(kind, params):
    x = images((6, 5, 5, 2), CHANNELS_LAST)
    runs = [OpHarness(MixOp("m", kind, params, seed=seed), x) for seed in (1, 1, 2)]
    first = [runs[0].forward() for _ in range(2)]
    np.testing.assert_array_equal(runs[1].forward(), first[0])
    np.testing.assert_array_equal(runs[1].forward(), first[1])
    assert not np.array_equal(first[0], first[1])
    assert not np.array_equal(runs[2].forward(), first[0])
    inference = OpHarness(MixOp("m", kind, params, seed=1), x, training=False)
    np.testing.assert_array_equal(inference.forward(), x)
