"""Kernels of the random affine layers (RandomRotation, RandomZoom, RandomTranslation,
RandomShear): each image of an NHWC batch is sampled through its own affine map, as Keras 3's
`keras.ops.image.affine_transform` does on the JAX backend (jax.scipy.ndimage.map_coordinates,
order 0 or 1).

A map is a row of 6 floats (a0, a1, a2, b0, b1, b2): output pixel (row r, column c) reads the
input at column a0 * c + a1 * r + a2 and row b0 * c + b1 * r + b2. Bilinear reads the four
neighbours floor(.) and floor(.) + 1 with weights 1 - f and f; nearest reads the one at the
coordinate rounded half away from zero. Each neighbour index outside the image is fixed per
fill mode as JAX fixes it: clamped ('nearest'), taken modulo the size ('wrap'), mirrored about
the outer edge ('reflect', d c b a | a b c d | d c b a), or read as fill_value ('constant').

The backward is the transpose of the same sampling (each output gradient scattered onto the
neighbours it read, with the same weights): images are independent, so the batch is split
across threads by image and no two threads write the same input gradient.
"""

import math

import numpy as np

from .numba_config import PARALLEL, SERIAL, njit, prange

FILL_MODES = {"constant": 0, "nearest": 1, "reflect": 2, "wrap": 3}
CONSTANT, NEAREST, REFLECT, WRAP = range(4)
INTERPOLATIONS = {"nearest": 0, "bilinear": 1}


@njit(inline="always", **SERIAL)
def _fix(index, size, mode):
    """The index JAX reads for neighbour `index` of an axis of `size`, or -1 (constant fill)."""
    if 0 <= index < size:
        return index
    if mode == CONSTANT:
        return -1
    if mode == NEAREST:
        return 0 if index < 0 else size - 1
    if mode == WRAP:
        return index % size
    # reflect: JAX's _reflect_index_fixer, (mirror(2i + 1, 2 size + 1) - 1) // 2
    s = 2 * size  # half-wavelength of the triangular wave of size 2 size + 1
    mirrored = abs((2 * index + 1 + s) % (2 * s) - s)
    return (mirrored - 1) // 2


@njit(inline="always", **SERIAL)
def _round_half_away(value):
    return math.floor(value + 0.5) if value >= 0 else -math.floor(-value + 0.5)


@njit(inline="always", **SERIAL)
def _taps(coordinate, size, mode, bilinear):
    """(index0, weight0, index1, weight1) along one axis; an index -1 reads the fill value."""
    if bilinear:
        lower = math.floor(coordinate)
        upper_weight = np.float32(coordinate - lower)
        first = int(lower)
        return (_fix(first, size, mode), np.float32(1.0) - upper_weight,
                _fix(first + 1, size, mode), upper_weight)
    return _fix(int(_round_half_away(coordinate)), size, mode), np.float32(1.0), 0, \
        np.float32(0.0)


@njit(**PARALLEL)
def affine_forward_kernel(x, y, shape, maps, mode, bilinear, fill_value):
    """y[n] = x[n] sampled through maps[n]; x, y flat NHWC float32, shape = (N, H, W, C)."""
    n_images, h, w, channels = shape[0], shape[1], shape[2], shape[3]
    source = x.reshape((n_images, h, w, channels))
    target = y.reshape((n_images, h, w, channels))
    for n in prange(n_images):
        a0, a1, a2 = np.float32(maps[n, 0]), np.float32(maps[n, 1]), np.float32(maps[n, 2])
        b0, b1, b2 = np.float32(maps[n, 3]), np.float32(maps[n, 4]), np.float32(maps[n, 5])
        for r in range(h):
            for c in range(w):
                row = np.float32(r) * b1 + np.float32(c) * b0 + b2
                col = np.float32(r) * a1 + np.float32(c) * a0 + a2
                r0, wr0, r1, wr1 = _taps(row, h, mode, bilinear)
                c0, wc0, c1, wc1 = _taps(col, w, mode, bilinear)
                for k in range(channels):
                    total = np.float32(0.0)
                    for ri, wr in ((r0, wr0), (r1, wr1)):
                        for ci, wc in ((c0, wc0), (c1, wc1)):
                            weight = wr * wc
                            if weight == 0:
                                continue
                            if ri < 0 or ci < 0:
                                total += weight * fill_value
                            else:
                                total += weight * source[n, ri, ci, k]
                    target[n, r, c, k] = total


@njit(**PARALLEL)
def affine_backward_kernel(dy, dx, shape, maps, mode, bilinear):
    """dx[n] = the transpose of the sampling applied to dy[n] (fill values get no gradient)."""
    n_images, h, w, channels = shape[0], shape[1], shape[2], shape[3]
    grad = dy.reshape((n_images, h, w, channels))
    target = dx.reshape((n_images, h, w, channels))
    for n in prange(n_images):
        target[n] = 0
        a0, a1, a2 = np.float32(maps[n, 0]), np.float32(maps[n, 1]), np.float32(maps[n, 2])
        b0, b1, b2 = np.float32(maps[n, 3]), np.float32(maps[n, 4]), np.float32(maps[n, 5])
        for r in range(h):
            for c in range(w):
                row = np.float32(r) * b1 + np.float32(c) * b0 + b2
                col = np.float32(r) * a1 + np.float32(c) * a0 + a2
                r0, wr0, r1, wr1 = _taps(row, h, mode, bilinear)
                c0, wc0, c1, wc1 = _taps(col, w, mode, bilinear)
                for ri, wr in ((r0, wr0), (r1, wr1)):
                    for ci, wc in ((c0, wc0), (c1, wc1)):
                        weight = wr * wc
                        if weight == 0 or ri < 0 or ci < 0:
                            continue
                        for k in range(channels):
                            target[n, ri, ci, k] += weight * grad[n, r, c, k]
