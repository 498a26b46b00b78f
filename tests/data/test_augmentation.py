"""The augmentation kernels against Keras 2's own recipe: its apply_affine_transform (rebuilt
here from scipy.ndimage.affine_transform, order 1, per channel), flips, channel shift and
standardize in numpy."""

import numpy as np
import pytest
from scipy import ndimage

from kiln.data import augmentation as aug


def keras2_matrix(h, w, theta=0, tx=0, ty=0, shear=0, zx=1, zy=1):
    """Keras 2 (keras_preprocessing) apply_affine_transform's matrix for an (h, w) image, in
    array (row, col) order, or None for the identity."""
    t = None

    def chain(m):
        return m if t is None else np.dot(t, m)
    if theta != 0:
        a = np.deg2rad(theta)
        t = np.array([[np.cos(a), -np.sin(a), 0], [np.sin(a), np.cos(a), 0], [0, 0, 1]])
    if tx != 0 or ty != 0:
        t = chain(np.array([[1, 0, tx], [0, 1, ty], [0, 0, 1]]))
    if shear != 0:
        s = np.deg2rad(shear)
        t = chain(np.array([[1, -np.sin(s), 0], [0, np.cos(s), 0], [0, 0, 1]]))
    if zx != 1 or zy != 1:
        t = chain(np.array([[zx, 0, 0], [0, zy, 0], [0, 0, 1]]))
    if t is None:
        return None
    o_x, o_y = float(h) / 2 - 0.5, float(w) / 2 - 0.5
    offset = np.array([[1, 0, o_x], [0, 1, o_y], [0, 0, 1]])
    reset = np.array([[1, 0, -o_x], [0, 1, -o_y], [0, 0, 1]])
    t = np.dot(np.dot(offset, t), reset)
    t[:, [0, 1]] = t[:, [1, 0]]
    t[[0, 1]] = t[[1, 0]]
    return t[:2]


def kernel_matrix(h, w, **transform):
    params = aug.parameter_table(1)
    for key, value in transform.items():
        params[0, getattr(aug, key.upper())] = value
    matrix = np.empty((2, 3))
    return matrix if aug._affine_matrix(params[0], h, w, matrix) else None


def scipy_affine(x, matrix, fill_mode, cval):
    """What Keras 2 did with the matrix: scipy's affine_transform, order 1, per channel."""
    channels = [ndimage.affine_transform(x[..., k], matrix[:, :2], matrix[:, 2], order=1,
                                         mode=fill_mode, cval=cval) for k in range(x.shape[2])]
    return np.stack(channels, axis=2)


def run_kernel(images, rows, mode="nearest", cval=0.0):
    params = aug.parameter_table(len(rows))
    for i, row in enumerate(rows):
        for key, value in row.items():
            params[i, getattr(aug, key.upper())] = value
    out = np.empty((len(rows), *images.shape[1:]), np.float32)
    aug.transform_batch(images, np.arange(len(rows)), params, out, aug.FILL_MODES[mode], cval)
    return out


TRANSFORMS = [dict(theta=27.0), dict(tx=3.3, ty=-5.7), dict(tx=4.0, ty=-2.0),
              dict(shear=19.0), dict(zx=0.7, zy=1.3), dict(zx=1.6, zy=0.8),
              dict(theta=-41.0, tx=-2.2, ty=7.9, shear=-11.0, zx=1.2, zy=0.9),
              dict(theta=180.0), dict(tx=40.0, ty=-33.5)]


@pytest.mark.parametrize("transform", TRANSFORMS)
def test_the_matrix_is_keras2s(transform):
    np.testing.assert_allclose(kernel_matrix(13, 17, **transform),
                               keras2_matrix(13, 17, **transform), rtol=1e-12, atol=1e-12)
    assert kernel_matrix(13, 17) is None and keras2_matrix(13, 17) is None


@pytest.mark.parametrize("mode", ["constant", "nearest", "reflect", "wrap"])
def test_affine_transforms_equal_scipy_as_keras2_called_it(mode):
    """Given the same matrix (a last-bit difference in it moves a sample that sits exactly on
    the border in or out of 'constant' fill), every pixel equals scipy's."""
    rng = np.random.default_rng(0)
    images = rng.random((len(TRANSFORMS), 13, 17, 3)).astype(np.float32) * 255
    out = run_kernel(images, TRANSFORMS, mode, cval=7.5)
    for image, result, transform in zip(images, out, TRANSFORMS):
        expected = scipy_affine(image, kernel_matrix(13, 17, **transform), mode, 7.5)
        np.testing.assert_allclose(result, expected, rtol=1e-5, atol=1e-3,
                                   err_msg=f"{mode} {transform}")


def test_channels_first_views_and_uint8_sources_give_the_same_result():
    rng = np.random.default_rng(1)
    images = rng.integers(0, 256, (2, 9, 11, 3)).astype(np.uint8)
    rows = [dict(theta=13.0, tx=1.5), dict(zx=0.8, zy=0.8, flip_h=1)]
    expected = run_kernel(images.astype(np.float32), rows)
    first = np.ascontiguousarray(images.transpose(0, 3, 1, 2))  # (N, C, H, W) storage
    out = np.empty((2, 3, 9, 11), np.float32)
    params = aug.parameter_table(2)
    params[0, aug.THETA], params[0, aug.TX] = 13.0, 1.5
    params[1, aug.ZX] = params[1, aug.ZY] = 0.8
    params[1, aug.FLIP_H] = 1
    aug.transform_batch(first.transpose(0, 2, 3, 1), np.arange(2), params,
                        out.transpose(0, 2, 3, 1), aug.NEAREST, 0.0)
    np.testing.assert_allclose(out.transpose(0, 2, 3, 1), expected, rtol=1e-6)


def test_flips_channel_shift_and_the_batch_index():
    rng = np.random.default_rng(2)
    images = rng.random((5, 4, 6, 2)).astype(np.float32)
    out = run_kernel(images[[3, 1]], [dict(flip_h=1, flip_v=1),
                                      dict(channel_shift=0.3, has_channel_shift=1)])
    np.testing.assert_array_equal(out[0], images[3][::-1, ::-1])
    np.testing.assert_allclose(out[1], np.clip(images[1] + np.float32(0.3), images[1].min(),
                                               images[1].max()), rtol=1e-6)
    picked = np.empty((2, 4, 6, 2), np.float32)
    aug.transform_batch(images, np.array([4, 0]), aug.parameter_table(2), picked,
                        aug.NEAREST, 0.0)
    np.testing.assert_array_equal(picked, images[[4, 0]])


def test_standardize_equals_keras2_numpy_steps():
    rng = np.random.default_rng(3)
    batch = rng.random((3, 5, 4, 3)).astype(np.float32) * 255
    mean = rng.random(3).astype(np.float32)
    std = rng.random(3).astype(np.float32) + 0.5
    out = batch.copy()
    aug.standardize_batch(out, 1 / 255.0, True, True, mean, std)
    for image, result in zip(batch, out):
        x = image.copy()
        x *= 1 / 255.0
        x -= np.mean(x, keepdims=True)
        x /= (np.std(x, keepdims=True) + 1e-6)
        x -= mean.reshape(1, 1, 3)
        x /= (std.reshape(1, 1, 3) + 1e-6)
        np.testing.assert_allclose(result, x, rtol=1e-4, atol=1e-5)
    untouched = batch.copy()
    aug.standardize_batch(untouched, 0.0, False, False, np.empty(0, np.float32),
                          np.empty(0, np.float32))
    np.testing.assert_array_equal(untouched, batch)
