"""kiln.data.image_resize against keras.ops.image.resize (JAX backend, antialias=False): every
interpolation, shrinking and growing, crop / pad to the aspect ratio, 1 / 3 / 4 channels."""

import os

os.environ["KERAS_BACKEND"] = "jax"  # before anything imports Keras

import numpy as np  # noqa: E402
import pytest  # noqa: E402

from kiln.data.image_resize import resize_images  # noqa: E402

keras = pytest.importorskip("keras")

# shrink, grow, shrink one axis and grow the other (height, width -> target)
SHAPES = [(17, 9, 8, 8), (5, 7, 11, 13), (31, 17, 12, 40)]


@pytest.mark.parametrize("interpolation, aspect", [
    ("bilinear", None), ("nearest", None), ("bicubic", None), ("lanczos3", None),
    ("lanczos5", None), ("bilinear", "crop"), ("nearest", "crop"), ("bicubic", "pad"),
    ("lanczos5", "pad"), ("bilinear", "pad")])
def test_resize_equals_keras_ops_image_resize(interpolation, aspect):
    rng = np.random.default_rng(len(interpolation))
    for (height, width, target_height, target_width), channels in zip(SHAPES, [1, 3, 4]):
        x = rng.integers(0, 256, (2, height, width, channels)).astype(np.float32)
        if channels == 3:
            x = x.astype(np.uint8)  # read as it is, as from Pillow
        options = dict(crop_to_aspect_ratio=aspect == "crop", pad_to_aspect_ratio=aspect == "pad")
        expected = np.asarray(keras.ops.image.resize(
            x.astype(np.float32), (target_height, target_width), interpolation=interpolation,
            **options))
        got = resize_images(x, (target_height, target_width), interpolation, **options)
        assert got.shape == expected.shape and got.dtype == np.float32
        # float32 sums in another order: within 1e-6 of the 0..255 range
        np.testing.assert_allclose(got, expected, rtol=0, atol=3e-4)
        if interpolation == "nearest":
            np.testing.assert_array_equal(got, expected)


def test_resize_refuses_bad_arguments():
    x = np.zeros((1, 4, 4, 3), np.float32)
    with pytest.raises(ValueError, match="argument interpolation must be one of"):
        resize_images(x, (2, 2), "area")
    with pytest.raises(ValueError, match="only one of crop_to_aspect_ratio"):
        resize_images(x, (2, 2), crop_to_aspect_ratio=True, pad_to_aspect_ratio=True)
    with pytest.raises(ValueError, match=r"shape \(batch, height, width, channels\)"):
        resize_images(x[0], (2, 2))
