"""ImageDataGenerator against Keras 2's own, which Keras 3 still ships as
keras.src.legacy.preprocessing.image (scipy.ndimage for the affine transform): the same
transform parameters give the same image for rotation, shifts, shear, zoom, flips and channel
shift in every fill mode and both data formats, and .fit / standardize / flow give the same
feature-wise statistics, ZCA matrix and standardized batches."""

import os

os.environ.setdefault("KERAS_BACKEND", "jax")

import numpy as np  # noqa: E402
import pytest  # noqa: E402

from kiln.keras.preprocessing.image import ImageDataGenerator  # noqa: E402

pytest.importorskip("scipy")
legacy = pytest.importorskip("keras.src.legacy.preprocessing.image")

RNG = np.random.default_rng(0)
X = (RNG.random((12, 7, 9, 3)) * 255).astype(np.float32)  # not square: rows and cols differ
PARAMETERS = [
    dict(theta=23.0),
    dict(tx=1.5, ty=-2.0),
    dict(shear=12.0),
    dict(zx=0.8, zy=1.15),
    dict(theta=-31.0, tx=-1.0, ty=2.5, shear=-7.0, zx=1.2, zy=0.9, flip_horizontal=True,
         flip_vertical=True, channel_shift_intensity=10.0),
]


@pytest.mark.parametrize("data_format", ["channels_last", "channels_first"])
@pytest.mark.parametrize("fill_mode", ["constant", "nearest", "reflect", "wrap"])
def test_apply_transform_equals_keras2s(fill_mode, data_format):
    settings = dict(fill_mode=fill_mode, cval=7.0, data_format=data_format)
    ours, theirs = ImageDataGenerator(**settings), legacy.ImageDataGenerator(**settings)
    image = X[0] if data_format == "channels_last" else X[0].transpose(2, 0, 1)
    for parameters in PARAMETERS:
        expected = theirs.apply_transform(image.copy(), dict(parameters))
        np.testing.assert_allclose(ours.apply_transform(image, dict(parameters)), expected,
                                   rtol=1e-5, atol=1e-3, err_msg=str(parameters))


@pytest.mark.parametrize("settings", [
    dict(featurewise_center=True, featurewise_std_normalization=True, rescale=1 / 255.0),
    dict(samplewise_center=True, samplewise_std_normalization=True),
    dict(featurewise_center=True, zca_whitening=True, zca_epsilon=1e-3, rescale=1 / 255.0),
    dict(preprocessing_function=lambda image: image + 1.0, rescale=0.5),
], ids=["featurewise", "samplewise", "zca", "preprocessing_function"])
def test_fit_standardize_and_flow_equal_keras2s(settings):
    ours, theirs = ImageDataGenerator(**settings), legacy.ImageDataGenerator(**settings)
    ours.fit(X)
    theirs.fit(X)
    for name in ("mean", "std", "zca_whitening_matrix"):
        expected = getattr(theirs, name)
        if expected is not None:
            np.testing.assert_allclose(getattr(ours, name), expected, rtol=1e-4, atol=1e-6,
                                       err_msg=name)
    expected = np.stack([theirs.standardize(image.copy()) for image in X])
    np.testing.assert_allclose(ours.standardize(X[0].copy()), expected[0], rtol=1e-4,
                               atol=1e-5)
    batch = ours.flow(X, batch_size=len(X), shuffle=False)[0]
    np.testing.assert_allclose(batch, expected, rtol=1e-4, atol=1e-5)
