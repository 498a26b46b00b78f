"""The augmentation ops (kiln/ops/image_*.py) in training plans, both data formats: a given draw
(the affine maps, flips, factors, crop offset an op keeps after each step) transforms the images
exactly as Keras 3's own functions do with the same parameters (keras.ops.image.affine_transform,
keras.ops.image.resize, the layers' formulas); the draws follow Keras's distributions; the
backward is the transpose of the forward; the seed fixes the sequence; inference plans are the
identity."""

import os

import numpy as np
import pytest
from op_checker import CHANNELS_FIRST, CHANNELS_LAST, OpHarness

from kiln.ops.image_affine import RandomAffineOp
from kiln.ops.image_color import RandomBrightnessOp, RandomContrastOp
from kiln.ops.image_flip import RandomFlipOp
from kiln.ops.image_resize import RandomCropOp, ResizeOp

os.environ.setdefault("KERAS_BACKEND", "jax")
keras = pytest.importorskip("keras")

FORMATS = [CHANNELS_LAST, CHANNELS_FIRST]


def images(shape, data_format, seed=0, low=0.0, high=1.0):
    x = np.random.default_rng(seed).uniform(low, high, size=shape).astype(np.float32)
    return np.ascontiguousarray(x.transpose(0, 3, 1, 2)) if data_format == CHANNELS_FIRST \
        else x


def as_nhwc(x, data_format):
    return x.transpose(0, 2, 3, 1) if data_format == CHANNELS_FIRST else x


def check_transpose(harness, x, seed=1):
    """<dy, forward(x)> == <backward(dy), x> for a forward linear in x (its last draw)."""
    y = harness.forward(x)
    dy = np.random.default_rng(seed).normal(size=y.shape).astype(np.float32)
    grad, _ = harness.backward(dy)
    np.testing.assert_allclose(np.sum(grad.astype(np.float64) * x),
                               np.sum(y.astype(np.float64) * dy), rtol=1e-4)


AFFINE = {
    "rotation": ("RandomRotation", ((-0.2, 0.3), (0, 0))),
    "zoom": ("RandomZoom", ((-0.3, 0.4), (-0.2, 0.1))),
    "translation": ("RandomTranslation", ((-0.3, 0.3), (-0.2, 0.4))),
    "shear": ("RandomShear", ((0.1, 0.5), (-0.3, 0.3))),
}


@pytest.mark.parametrize("fill_mode,interpolation,data_format", [
    ("reflect", "bilinear", CHANNELS_LAST), ("wrap", "bilinear", CHANNELS_FIRST),
    ("constant", "bilinear", CHANNELS_LAST), ("nearest", "bilinear", CHANNELS_FIRST),
    ("reflect", "nearest", CHANNELS_FIRST), ("wrap", "nearest", CHANNELS_LAST),
    ("constant", "nearest", CHANNELS_FIRST), ("nearest", "nearest", CHANNELS_LAST)])
def test_affine_draw_transforms_like_keras(fill_mode, interpolation, data_format):
    x = images((4, 7, 9, 2), data_format)
    op = RandomAffineOp("a", "RandomRotation", ((-0.5, 0.5), (0, 0)), interpolation, fill_mode,
                        fill_value=0.25, seed=3)
    harness = OpHarness(op, x, data_format=data_format)
    for _ in range(2):  # a new draw each step, each equal to Keras on its maps
        y = harness.forward()
        transform = np.concatenate([op.maps, np.zeros((4, 2), np.float32)], axis=1)
        expected = keras.ops.image.affine_transform(
            x, transform, interpolation=interpolation, fill_mode=fill_mode, fill_value=0.25,
            data_format=data_format)
        np.testing.assert_allclose(y, np.asarray(expected), rtol=1e-5, atol=1e-5)
    assert not np.allclose(harness.forward(), y)


@pytest.mark.parametrize("kind", list(AFFINE))
def test_affine_maps_are_the_keras_layers_matrices(kind):
    """Each kind's maps built from its draws: the parameters within the layer's ranges and the
    matrix Keras's layer builds from them."""
    layer, ranges = AFFINE[kind]
    h, w, n = 6, 10, 2000
    op = RandomAffineOp("a", layer, ranges, seed=5)
    harness = OpHarness(op, np.zeros((n, h, w, 1), np.float32))
    harness.forward()
    a0, a1, a2, b0, b1, b2 = op.maps.T.astype(np.float64)
    (l0, u0), (l1, u1) = ranges
    if kind == "rotation":
        turns = np.arctan2(b0, a0) / (2 * np.pi)
        cx, cy = (w - 1) / 2, (h - 1) / 2
        np.testing.assert_allclose(a2, cx - cx * a0 - cy * a1, atol=1e-4)
        np.testing.assert_allclose(b2, cy - cx * b0 - cy * b1, atol=1e-4)
        np.testing.assert_allclose(a1, -b0, atol=1e-6)
        draws = [turns]
    elif kind == "zoom":
        np.testing.assert_allclose(a2, (w - 1) / 2 * (1 - a0), atol=1e-5)
        np.testing.assert_allclose(b2, (h - 1) / 2 * (1 - b1), atol=1e-5)
        draws = [b1 - 1, a0 - 1]
    elif kind == "translation":
        draws = [-b2 / h, -a2 / w]
    else:
        sign = np.sign(a1)
        assert abs(np.mean(sign < 0) - 0.5) < 0.05  # Keras inverts half of the shears
        draws = [a1 * sign, b0 * sign]
    for draw, (low, high) in zip(draws, ranges):
        assert low - 1e-5 <= draw.min() and draw.max() <= high + 1e-5
        # uniform: each tenth of the range holds a tenth of the draws
        counts = np.histogram(draw, bins=10, range=(low, high))[0]
        assert np.all(np.abs(counts / n - 0.1) < 0.03)


@pytest.mark.parametrize("fill_mode", ["reflect", "wrap", "constant", "nearest"])
def test_affine_backward_is_the_transpose(fill_mode):
    x = images((3, 6, 5, 2), CHANNELS_LAST)
    op = RandomAffineOp("a", "RandomZoom", ((-0.5, 0.5), (1, 0)), fill_mode=fill_mode, seed=2)
    check_transpose(OpHarness(op, x), x)


@pytest.mark.parametrize("data_format", FORMATS)
@pytest.mark.parametrize("mode", ["horizontal", "vertical", "horizontal_and_vertical"])
def test_flip(mode, data_format):
    x = images((400, 3, 4, 2), data_format)
    op = RandomFlipOp("f", mode, seed=1)
    harness = OpHarness(op, x, data_format=data_format)
    y = as_nhwc(harness.forward(), data_format)
    source = as_nhwc(x, data_format)
    flipped = op.uniforms[:, 0] <= 0.5
    assert abs(flipped.mean() - 0.5) < 0.08
    axes = {"horizontal": (2,), "vertical": (1,), "horizontal_and_vertical": (1, 2)}[mode]
    np.testing.assert_array_equal(y[flipped], np.flip(source[flipped], axis=axes))
    np.testing.assert_array_equal(y[~flipped], source[~flipped])
    check_transpose(harness, x)


@pytest.mark.parametrize("data_format", FORMATS)
def test_contrast_and_brightness(data_format):
    x = images((300, 4, 5, 3), data_format, high=255.0)
    source = as_nhwc(x, data_format).astype(np.float64)
    contrast = RandomContrastOp("c", (0.2, 0.5), (0, 255), seed=1)
    harness = OpHarness(contrast, x, data_format=data_format)
    y = as_nhwc(harness.forward(), data_format)
    f = contrast.factors.astype(np.float64)
    assert 0.8 <= f.min() and f.max() <= 1.5 and abs(f.mean() - 1.15) < 0.03
    mean = source.mean(axis=(1, 2), keepdims=True)
    expected = np.clip((source - mean) * f[:, None, None, None] + mean, 0, 255)
    np.testing.assert_allclose(y, expected, rtol=1e-5, atol=1e-3)

    brightness = RandomBrightnessOp("b", (-0.2, 0.1), (0, 255), seed=1)
    harness = OpHarness(brightness, x, data_format=data_format)
    y = as_nhwc(harness.forward(), data_format)
    d = brightness.factors.astype(np.float64)
    assert -51 <= d.min() and d.max() <= 25.5 and abs(d.mean() + 12.75) < 3
    np.testing.assert_allclose(y, np.clip(source + d[:, None, None, None], 0, 255), atol=1e-3)


@pytest.mark.parametrize("op", ["contrast", "brightness"])
def test_color_backward_matches_central_differences(op):
    x = images((2, 3, 3, 2), CHANNELS_LAST, low=0.1, high=0.9)
    make = (lambda: RandomContrastOp("c", (0.5, 0.5), (0, 1), seed=4)) if op == "contrast" \
        else (lambda: RandomBrightnessOp("b", (-0.3, 0.3), (0, 1), seed=4))
    harness = OpHarness(make(), x)
    y = harness.forward(x)
    dy = np.random.default_rng(0).normal(size=y.shape).astype(np.float32)
    grad, _ = harness.backward(dy)
    eps = 1e-3
    for index in [(0, 0, 0, 0), (0, 1, 2, 1), (1, 2, 1, 0), (1, 0, 2, 1)]:
        values = []
        for sign in (1, -1):
            fresh = OpHarness(make(), x)  # the same seed: the same first draw
            moved = x.copy()
            moved[index] += sign * eps
            values.append(np.sum(fresh.forward(moved).astype(np.float64) * dy))
        assert abs((values[0] - values[1]) / (2 * eps) - grad[index]) < 2e-2


RESIZES = [  # (size, options, interpolation, data format)
    ((4, 5), {}, "bilinear", CHANNELS_LAST), ((12, 9), {}, "bilinear", CHANNELS_FIRST),
    ((4, 5), {"antialias": True}, "bilinear", CHANNELS_LAST),
    ((6, 6), {"crop_to_aspect_ratio": True}, "bilinear", CHANNELS_FIRST),
    ((6, 6), {"pad_to_aspect_ratio": True}, "bilinear", CHANNELS_LAST),
    ((4, 5), {}, "nearest", CHANNELS_FIRST), ((12, 9), {}, "nearest", CHANNELS_LAST),
    ((6, 6), {"pad_to_aspect_ratio": True}, "nearest", CHANNELS_FIRST),
    ((4, 5), {}, "bicubic", CHANNELS_LAST), ((12, 9), {}, "bicubic", CHANNELS_FIRST),
    ((4, 5), {"antialias": True}, "bicubic", CHANNELS_FIRST),
    ((12, 9), {"crop_to_aspect_ratio": True}, "lanczos3", CHANNELS_LAST),
    ((4, 5), {}, "lanczos5", CHANNELS_LAST),
]


@pytest.mark.parametrize("size,options,interpolation,data_format", RESIZES)
def test_resize_like_keras(size, options, interpolation, data_format):
    x = images((2, 7, 10, 3), data_format)
    op = ResizeOp("r", size, "Resizing", interpolation,
                  options.get("crop_to_aspect_ratio", False),
                  options.get("pad_to_aspect_ratio", False), 0.5, options.get("antialias", False))
    harness = OpHarness(op, x, data_format=data_format)
    expected = keras.ops.image.resize(x, size, interpolation=interpolation, fill_value=0.5,
                                      data_format=data_format, **options)
    np.testing.assert_allclose(harness.forward(), np.asarray(expected), rtol=1e-5, atol=1e-5)
    if not options.get("pad_to_aspect_ratio"):  # the fill makes pad affine, not linear
        check_transpose(harness, x)


@pytest.mark.parametrize("size", [(3, 4), (12, 9)])
def test_resize_area_like_jax(size):
    """'area', which Keras's JAX backend does not offer: as jax.image.resize computes it."""
    jax = pytest.importorskip("jax")
    x = images((2, 7, 10, 3), CHANNELS_LAST)
    harness = OpHarness(ResizeOp("r", size, "Resizing", "area"), x)
    expected = jax.image.resize(x, (2, *size, 3), "area")
    np.testing.assert_allclose(harness.forward(), np.asarray(expected), rtol=1e-5, atol=1e-6)
    check_transpose(harness, x)


@pytest.mark.parametrize("size,data_format", [
    ((4, 5), CHANNELS_LAST), ((7, 10), CHANNELS_FIRST), ((9, 12), CHANNELS_FIRST),
    ((5, 12), CHANNELS_LAST)])
def test_center_crop_like_keras(size, data_format):
    x = images((2, 7, 10, 3), data_format)
    harness = OpHarness(ResizeOp("c", size, "CenterCrop"), x, data_format=data_format)
    expected = keras.layers.CenterCrop(*size, data_format=data_format)(x)
    np.testing.assert_allclose(harness.forward(), np.asarray(expected), rtol=1e-5, atol=1e-6)
    check_transpose(harness, x)


@pytest.mark.parametrize("data_format", FORMATS)
def test_random_crop(data_format):
    x = images((2, 7, 10, 3), data_format)
    op = RandomCropOp("c", (4, 6), seed=3)
    harness = OpHarness(op, x, data_format=data_format)
    source = as_nhwc(x, data_format)
    seen = set()
    for _ in range(200):
        y = as_nhwc(harness.forward(), data_format)
        top, left = op.offsets
        np.testing.assert_array_equal(y, source[:, top:top + 4, left:left + 6])
        seen.add((int(top), int(left)))
    assert seen == {(t, c) for t in range(4) for c in range(5)}  # every window, no other
    check_transpose(harness, x)
    # inference, and images not larger than the crop: the centred aspect-ratio window resized
    expected = keras.ops.image.resize(x, (4, 6), crop_to_aspect_ratio=True,
                                      data_format=data_format)
    inference = OpHarness(RandomCropOp("c", (4, 6)), x, data_format=data_format, training=False)
    np.testing.assert_allclose(inference.forward(), np.asarray(expected), rtol=1e-5, atol=1e-6)
    small = OpHarness(RandomCropOp("c", (7, 12)), x, data_format=data_format)
    expected = keras.ops.image.resize(x, (7, 12), crop_to_aspect_ratio=True,
                                      data_format=data_format)
    np.testing.assert_allclose(small.forward(), np.asarray(expected), rtol=1e-5, atol=1e-6)


RANDOM_OPS = {
    "affine": lambda seed: RandomAffineOp("a", "RandomTranslation", ((-0.3, 0.3), (-0.3, 0.3)),
                                          seed=seed),
    "flip": lambda seed: RandomFlipOp("f", "horizontal", seed=seed),
    "contrast": lambda seed: RandomContrastOp("c", (0.5, 0.5), (0, 1), seed=seed),
    "brightness": lambda seed: RandomBrightnessOp("b", (-0.3, 0.3), (0, 1), seed=seed),
    "crop": lambda seed: RandomCropOp("r", (3, 3), seed=seed),
}


@pytest.mark.parametrize("name", list(RANDOM_OPS))
def test_seeded_sequences_and_identity_in_inference(name):
    x = images((8, 5, 5, 2), CHANNELS_LAST)
    first = OpHarness(RANDOM_OPS[name](7), x)
    again = OpHarness(RANDOM_OPS[name](7), x)
    other = OpHarness(RANDOM_OPS[name](8), x)
    steps = [first.forward() for _ in range(3)]
    for step in steps:
        np.testing.assert_array_equal(again.forward(), step)
    assert len({step.tobytes() for step in steps}) > 1  # a new draw each step
    assert not np.array_equal(other.forward(), steps[0])
    if name != "crop":
        inference = OpHarness(RANDOM_OPS[name](7), x, training=False)
        np.testing.assert_array_equal(inference.forward(), x)
        assert inference.builder.forward_calls == []
