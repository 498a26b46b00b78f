"""Image augmentation kernels: Keras 2's ImageDataGenerator transforms, compiled.

Keras 2 transformed one image at a time in Python: an affine map through
scipy.ndimage.affine_transform (order 1, fill modes constant / nearest / reflect / wrap) per
channel, then channel shift, flips and normalization, each a numpy temporary. Here one serial
numba kernel does a whole batch in one pass per image: it builds each image's matrix as Keras
does, samples the source with scipy's exact boundary rules (so results equal scipy's), folds
the flips into the output index and applies the channel shift in place; a second kernel does
rescale and the sample-wise / feature-wise normalization. Both release the GIL and are serial
on purpose: they run in worker threads beside the training step, and a parallel kernel there
would fight the step's oneDNN threads for the same cores.

Images are (H, W, C) views (channels_first data is passed transposed), rows are axis 0.
"""

import math

import numpy as np

from ..ops.numba_config import njit

# Exact float semantics: boundary tests such as `coordinate > length - 1` must round as
# scipy's C code does, which fastmath's reassociation and FMA contraction would change.
_EXACT = dict(cache=True, nogil=True)

FILL_MODES = {"constant": 0, "nearest": 1, "reflect": 2, "wrap": 3}
CONSTANT, NEAREST, REFLECT, WRAP = range(4)

# Columns of the per-image parameter table (float64, one row per image of the batch).
THETA, TX, TY, SHEAR, ZX, ZY, CHANNEL_SHIFT, HAS_CHANNEL_SHIFT, FLIP_H, FLIP_V = range(10)
PARAMETER_COUNT = 10


def parameter_table(count):
    """A table of `count` identity transforms (zoom 1, everything else 0)."""
    table = np.zeros((count, PARAMETER_COUNT), dtype=np.float64)
    table[:, ZX] = table[:, ZY] = 1.0
    return table


@njit(**_EXACT)
def _map_coordinate(x, length, mode):
    """scipy.ndimage's map_coordinate for the modes other than 'reflect': a coordinate outside
    [0, length - 1] clamped ('nearest') or wrapped with period length - 1 ('wrap': the first
    and last samples overlap), or -1 for 'constant' (the caller then writes cval)."""
    if x < 0:
        if mode == CONSTANT:
            return -1.0
        if mode == NEAREST or length <= 1:
            return 0.0
        size = length - 1  # wrap: the first and the last sample overlap (scipy's 'wrap')
        return x + size * (int(-x / size) + 1)
    if x > length - 1:
        if mode == CONSTANT:
            return -1.0
        if mode == NEAREST or length <= 1:
            return length - 1.0
        size = length - 1
        return x - size * int(x / size)
    return x


@njit(**_EXACT)
def _reflect(index, length):
    """'reflect': the image extended by mirroring about its outer edge (d c b a | a b c d |
    d c b a); scipy interpolates between these extended samples."""
    period = 2 * length
    index %= period
    return period - 1 - index if index >= length else index


@njit(**_EXACT)
def _mirror(index, length):
    """The sample scipy reads for a spline neighbour outside the image (whole-sample mirror)."""
    if length <= 1:
        return 0
    period = 2 * length - 2
    if index < 0:
        index = period * (-index // period) + index
        return index + period if index <= 1 - length else -index
    if index >= length:
        index -= period * (index // period)
        return period - index if index >= length else index
    return index


@njit(inline="always", **_EXACT)
def _compose(a, b):
    """The product of two affine maps given as 6-tuples (rows [a0 a1 a2], [a3 a4 a5], and an
    implicit [0 0 1]): scalars, so building a matrix per image allocates nothing."""
    return (a[0] * b[0] + a[1] * b[3], a[0] * b[1] + a[1] * b[4],
            a[0] * b[2] + a[1] * b[5] + a[2],
            a[3] * b[0] + a[4] * b[3], a[3] * b[1] + a[4] * b[4],
            a[3] * b[2] + a[4] * b[5] + a[5])


@njit(**_EXACT)
def _affine_matrix(p, h, w, matrix):
    """Keras 2's apply_affine_transform matrix for parameters row `p` of an (h, w) image:
    rotation @ shift @ shear @ zoom about the image centre, rows and columns swapped into
    array order. matrix: (2, 3) float64 out (input coordinate = matrix @ (r, c, 1)).
    Returns False for the identity (Keras then leaves the image as it is)."""
    theta, tx, ty = p[THETA], p[TX], p[TY]
    shear, zx, zy = p[SHEAR], p[ZX], p[ZY]
    if theta == 0 and tx == 0 and ty == 0 and shear == 0 and zx == 1 and zy == 1:
        return False
    t = (1.0, 0.0, 0.0, 0.0, 1.0, 0.0)
    if theta != 0:
        a = np.deg2rad(theta)
        t = (np.cos(a), -np.sin(a), 0.0, np.sin(a), np.cos(a), 0.0)
    if tx != 0 or ty != 0:
        t = _compose(t, (1.0, 0.0, tx, 0.0, 1.0, ty))
    if shear != 0:
        s = np.deg2rad(shear)
        t = _compose(t, (1.0, -np.sin(s), 0.0, 0.0, np.cos(s), 0.0))
    if zx != 1 or zy != 1:
        t = _compose(t, (zx, 0.0, 0.0, 0.0, zy, 0.0))
    ox, oy = h / 2.0 - 0.5, w / 2.0 - 0.5
    t = _compose(_compose((1.0, 0.0, ox, 0.0, 1.0, oy), t), (1.0, 0.0, -ox, 0.0, 1.0, -oy))
    # Keras's matrix is in (x, y) order; arrays index (row, col): M' = P M P
    matrix[0, 0], matrix[0, 1], matrix[0, 2] = t[4], t[3], t[5]
    matrix[1, 0], matrix[1, 1], matrix[1, 2] = t[1], t[0], t[2]
    return True


@njit(inline="always", **_EXACT)
def _sample_pixel(source, target, r, c, y, x, mode, cval):
    """target[r, c, :] = source sampled bilinearly at (y, x) with scipy's order-1 rules."""
    h, w, channels = source.shape
    if 0.0 <= y < h - 1 and 0.0 <= x < w - 1:
        # inside: every fill mode reads the four neighbours as they are
        r0, c0 = int(y), int(x)
        fy, fx = y - r0, x - c0
        w00, w01 = (1.0 - fy) * (1.0 - fx), (1.0 - fy) * fx
        w10, w11 = fy * (1.0 - fx), fy * fx
        for k in range(channels):
            target[r, c, k] = (w00 * source[r0, c0, k] + w01 * source[r0, c0 + 1, k]
                               + w10 * source[r0 + 1, c0, k] + w11 * source[r0 + 1, c0 + 1, k])
        return
    if mode == REFLECT:
        y0, x0 = math.floor(y), math.floor(x)
        r0, r1 = _reflect(int(y0), h), _reflect(int(y0) + 1, h)
        c0, c1 = _reflect(int(x0), w), _reflect(int(x0) + 1, w)
    else:
        y = _map_coordinate(y, h, mode)
        x = _map_coordinate(x, w, mode)
        if y <= -1.0 or x <= -1.0:
            for k in range(channels):
                target[r, c, k] = cval
            return
        y0, x0 = math.floor(y), math.floor(x)
        r0, r1 = _mirror(int(y0), h), _mirror(int(y0) + 1, h)
        c0, c1 = _mirror(int(x0), w), _mirror(int(x0) + 1, w)
    fy, fx = y - y0, x - x0
    w00, w01 = (1.0 - fy) * (1.0 - fx), (1.0 - fy) * fx
    w10, w11 = fy * (1.0 - fx), fy * fx
    for k in range(channels):
        target[r, c, k] = (w00 * source[r0, c0, k] + w01 * source[r0, c1, k]
                           + w10 * source[r1, c0, k] + w11 * source[r1, c1, k])


@njit(**_EXACT)
def _sample_image(source, target, matrix, mode, cval):
    """target[r, c, :] = source sampled at matrix @ (r, c, 1) (general affine map)."""
    h, w = source.shape[0], source.shape[1]
    for r in range(h):
        for c in range(w):
            # summed in scipy's order (offset first): a sample exactly on the border rounds
            # to the same side as scipy's, which decides 'constant' fill there
            y = matrix[0, 2] + r * matrix[0, 0] + c * matrix[0, 1]
            x = matrix[1, 2] + r * matrix[1, 0] + c * matrix[1, 1]
            _sample_pixel(source, target, r, c, y, x, mode, cval)


@njit(**_EXACT)
def _translate_image(source, target, dy, dx, mode, cval):
    """target = source read at (r + dy, c + dx): a shift, the cifar10_cnn case. Every pixel
    whose four neighbours are inside the image has the same four weights, so only the
    border pixels need the per-pixel coordinate and fill rules."""
    h, w, channels = source.shape
    oy, ox = math.floor(dy), math.floor(dx)
    fy, fx = dy - oy, dx - ox
    w00, w01 = (1.0 - fy) * (1.0 - fx), (1.0 - fy) * fx
    w10, w11 = fy * (1.0 - fx), fy * fx
    first, stop = max(0, -ox), min(w, w - 1 - ox)  # columns with 0 <= c + ox <= w - 2
    for r in range(h):
        y = dy + r
        r0 = r + oy
        if 0 <= r0 <= h - 2:
            for c in range(first, stop):
                c0 = c + ox
                for k in range(channels):
                    target[r, c, k] = (w00 * source[r0, c0, k] + w01 * source[r0, c0 + 1, k]
                                       + w10 * source[r0 + 1, c0, k]
                                       + w11 * source[r0 + 1, c0 + 1, k])
            for c in range(min(first, w)):
                _sample_pixel(source, target, r, c, y, dx + c, mode, cval)
            for c in range(max(stop, first, 0), w):
                _sample_pixel(source, target, r, c, y, dx + c, mode, cval)
        else:
            for c in range(w):
                _sample_pixel(source, target, r, c, y, dx + c, mode, cval)


@njit(**_EXACT)
def _flip(target, flip_h, flip_v):
    """Keras 2 flips after the transform: swap columns and / or rows in place."""
    h, w, channels = target.shape
    if flip_h:
        for r in range(h):
            for c in range(w // 2):
                for k in range(channels):
                    value = target[r, c, k]
                    target[r, c, k] = target[r, w - 1 - c, k]
                    target[r, w - 1 - c, k] = value
    if flip_v:
        for r in range(h // 2):
            for c in range(w):
                for k in range(channels):
                    value = target[r, c, k]
                    target[r, c, k] = target[h - 1 - r, c, k]
                    target[h - 1 - r, c, k] = value


@njit(**_EXACT)
def transform_batch(images, index, params, out, mode, cval):
    """out[i] = Keras 2's apply_transform(images[index[i]], params[i]) without brightness.

    images: (N, H, W, C) source (any real dtype, any strides); index: int64 (B,);
    params: float64 (B, PARAMETER_COUNT); out: float32 (B, H, W, C).
    """
    h, w = images.shape[1], images.shape[2]
    matrix = np.empty((2, 3))
    for i in range(index.shape[0]):
        source, target = images[index[i]], out[i]
        p = params[i]
        flip_h, flip_v = p[FLIP_H] != 0, p[FLIP_V] != 0
        if not _affine_matrix(p, h, w, matrix):
            for r in range(h):
                for c in range(w):
                    for k in range(source.shape[2]):
                        target[r, c, k] = source[r, c, k]
        elif (matrix[0, 0] == 1.0 and matrix[0, 1] == 0.0 and matrix[1, 0] == 0.0
              and matrix[1, 1] == 1.0):
            _translate_image(source, target, matrix[0, 2], matrix[1, 2], mode, cval)
        else:
            _sample_image(source, target, matrix, mode, cval)
        _flip(target, flip_h, flip_v)
        if p[HAS_CHANNEL_SHIFT] != 0:
            # Keras: every channel + intensity, clipped to the image's own min and max
            low, high = np.inf, -np.inf
            for value in target.flat:
                low, high = min(low, value), max(high, value)
            shift = np.float32(p[CHANNEL_SHIFT])
            for r in range(h):
                for c in range(w):
                    for k in range(target.shape[2]):
                        target[r, c, k] = min(max(target[r, c, k] + shift, low), high)


@njit(**_EXACT)
def standardize_batch(out, rescale, sample_center, sample_std, mean, std):
    """Keras 2's standardize (after any preprocessing_function) on each image of out
    (B, H, W, C) in place: * rescale, - its own mean, / (its std + 1e-6), - mean[C],
    / (std[C] + 1e-6). rescale 0 skips rescaling; empty mean / std skip those steps."""
    for i in range(out.shape[0]):
        image = out[i]
        if rescale != 0:
            for value_index in np.ndindex(image.shape):
                image[value_index] *= rescale
        if sample_center or sample_std:
            total = 0.0
            for value in image.flat:
                total += value
            average = total / image.size
            if sample_center:
                for value_index in np.ndindex(image.shape):
                    image[value_index] -= average
                average = 0.0
            if sample_std:
                squares = 0.0
                for value in image.flat:
                    squares += (value - average) ** 2
                scale = 1.0 / (math.sqrt(squares / image.size) + 1e-6)
                for value_index in np.ndindex(image.shape):
                    image[value_index] *= scale
        if mean.size:
            for value_index in np.ndindex(image.shape):
                image[value_index] -= mean[value_index[2]]
        if std.size:
            for value_index in np.ndindex(image.shape):
                image[value_index] /= std[value_index[2]] + 1e-6
