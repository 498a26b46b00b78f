"""Image resizing as Keras 3 does it: `keras.ops.image.resize` with `antialias=False`.

Keras 3 (JAX backend) resizes with `jax.image.resize`, whose kernels interpolate at half-pixel
centres (TensorFlow's `tf.image.resize` semantics): output pixel i samples the input at
`(i + 0.5) * in / out - 0.5`. Each axis is one weight matrix with a few non-zero weights per
output pixel (the kernel's taps, computed once per size in numpy); a numba kernel applies the
rows' taps, then the columns', reading uint8 pixels straight from Pillow's decoding:

- bilinear, bicubic (Keys, a = -0.5), lanczos3, lanczos5: the kernel's weights at the input
  pixels around each sample, divided by their sum (which clamps at the borders); a sample
  outside the input gets no weight. Without antialiasing the kernel keeps its width when
  shrinking, as in Keras.
- nearest: input pixel `floor((i + 0.5) * in / out)` (computed in float32, as JAX does).

`crop_to_aspect_ratio` first takes the largest centred crop of the target's aspect ratio;
`pad_to_aspect_ratio` first pads the short side with `fill_value` on both sides, as Keras's
JAX backend does. An axis whose size does not change is left as it is.
"""

import functools

import numpy as np

from ..ops.numba_config import njit

INTERPOLATIONS = ("bilinear", "nearest", "bicubic", "lanczos3", "lanczos5")


def _triangle(x):
    return np.maximum(0.0, 1.0 - np.abs(x))


def _keys_cubic(x):
    out = ((1.5 * x - 2.5) * x) * x + 1.0
    out = np.where(x >= 1.0, ((-0.5 * x + 2.5) * x - 4.0) * x + 2.0, out)
    return np.where(x >= 2.0, 0.0, out)


def _lanczos(radius):
    def kernel(x):
        y = radius * np.sin(np.pi * x) * np.sin(np.pi * x / radius)
        with np.errstate(divide="ignore", invalid="ignore"):
            out = np.where(x > 1e-3, y / np.where(x != 0, np.pi ** 2 * x ** 2, 1), 1.0)
        return np.where(x > radius, 0.0, out)
    return kernel


_KERNELS = {"bilinear": _triangle, "bicubic": _keys_cubic, "lanczos3": _lanczos(3.0),
            "lanczos5": _lanczos(5.0)}


@functools.lru_cache(maxsize=256)
def nearest_indices(input_size, output_size):
    """The input pixel each output pixel of one axis copies (float32 arithmetic, as JAX)."""
    offsets = (np.arange(output_size, dtype=np.float32) + np.float32(0.5)) \
        * np.float32(input_size) / np.float32(output_size)
    return np.floor(offsets).astype(np.int64)


@functools.lru_cache(maxsize=256)
def weight_matrix(input_size, output_size, interpolation):
    """(output_size, input_size) float32 matrix mapping one axis of the input to the output."""
    inv_scale = np.float32(input_size) / np.float32(output_size)
    sample = (np.arange(output_size, dtype=np.float32) + np.float32(0.5)) * inv_scale \
        - np.float32(0.5)
    distance = np.abs(sample[:, None] - np.arange(input_size, dtype=np.float32)[None, :])
    weights = _KERNELS[interpolation](distance).astype(np.float32)
    total = weights.sum(axis=1, keepdims=True)
    usable = np.abs(total) > 1000.0 * np.finfo(np.float32).eps
    weights = np.where(usable, weights / np.where(total != 0, total, 1), 0.0)
    inside = (sample >= -0.5) & (sample <= input_size - 0.5)
    weights = np.where(inside[:, None], weights, 0.0).astype(np.float32)
    weights.flags.writeable = False
    return weights


def _crop_box(height, width, target_height, target_width):
    crop_height = max(min(height, int(float(width * target_height) / target_width)), 1)
    crop_width = max(min(width, int(float(height * target_width) / target_height)), 1)
    top = int(float(height - crop_height) / 2)
    left = int(float(width - crop_width) / 2)
    return slice(top, top + crop_height), slice(left, left + crop_width)


def _pad_widths(height, width, target_height, target_width):
    pad_height = max(height, int(float(width * target_height) / target_width))
    pad_width = max(width, int(float(height * target_width) / target_height))
    top = int(float(pad_height - height) / 2)
    left = int(float(pad_width - width) / 2)
    if top > 0:
        return (top, top), (0, 0)
    if left > 0:
        return (0, 0), (left, left)
    return (0, 0), (0, 0)


def resize_images(images, size, interpolation="bilinear", crop_to_aspect_ratio=False,
                  pad_to_aspect_ratio=False, fill_value=0.0, out=None):
    """Resizes images of shape (batch, height, width, channels) to `size` (height, width),
    as `keras.ops.image.resize` (channels_last, antialias=False); float32 result, written
    into `out` (batch, height, width, channels) if given. uint8 images are read as they are
    (their values are exact in float32), other dtypes are converted to float32 first."""
    if interpolation not in INTERPOLATIONS:
        raise ValueError(f"resize: argument interpolation must be one of {INTERPOLATIONS}, "
                         f"got {interpolation!r}")
    if crop_to_aspect_ratio and pad_to_aspect_ratio:
        raise ValueError("resize: only one of crop_to_aspect_ratio and pad_to_aspect_ratio "
                         "can be True")
    images = np.asarray(images)
    if images.dtype != np.uint8:
        images = images.astype(np.float32, copy=False)
    if images.ndim != 4:
        raise ValueError(f"resize: images must have shape (batch, height, width, channels), "
                         f"got {images.shape}")
    target_height, target_width = (int(size[0]), int(size[1]))
    height, width = images.shape[1:3]
    if crop_to_aspect_ratio:
        rows, columns = _crop_box(height, width, target_height, target_width)
        images = images[:, rows, columns]
    elif pad_to_aspect_ratio:
        rows, columns = _pad_widths(height, width, target_height, target_width)
        if rows != (0, 0) or columns != (0, 0):
            images = np.pad(images.astype(np.float32), ((0, 0), rows, columns, (0, 0)),
                            constant_values=np.float32(fill_value))
    height, width = images.shape[1:3]
    if out is None:
        out = np.empty((len(images), target_height, target_width, images.shape[3]),
                       np.float32)
    row_index, row_weight = taps(height, target_height, interpolation)
    column_index, column_weight = taps(width, target_width, interpolation)
    scratch = np.empty((target_height, width, images.shape[3]), np.float32)
    _resize_kernel(images, out, row_index, row_weight, column_index, column_weight, scratch)
    return out


@functools.lru_cache(maxsize=256)
def taps(input_size, output_size, interpolation):
    """One axis's weights as (input index, weight) pairs per output pixel: two read-only
    (output_size, taps) arrays, taps being the most non-zero weights an output pixel has (2
    for bilinear: without antialiasing the kernel does not widen when shrinking). An axis
    that keeps its size is copied (JAX leaves it alone); nearest copies one pixel each."""
    if input_size == output_size:
        index = np.arange(output_size).reshape(-1, 1)
        weight = np.ones((output_size, 1), np.float32)
    elif interpolation == "nearest":
        index = nearest_indices(input_size, output_size).reshape(-1, 1)
        weight = np.ones((output_size, 1), np.float32)
    else:
        weights = weight_matrix(input_size, output_size, interpolation)
        count = max(int((weights != 0).sum(axis=1).max()), 1)
        # the non-zero weights of each row first, in input order (a stable sort keeps it)
        index = np.argsort(weights == 0, axis=1, kind="stable")[:, :count]
        weight = np.take_along_axis(weights, index, axis=1)
    index, weight = np.ascontiguousarray(index, np.int64), np.ascontiguousarray(weight)
    index.flags.writeable = weight.flags.writeable = False
    return index, weight


@njit(cache=True, nogil=True)
def _resize_kernel(images, out, row_index, row_weight, column_index, column_weight,
                   scratch):
    """Per image: the rows pass into `scratch` (out_height, width, channels), then the
    columns pass into `out`; each output value is its taps' float32 products summed in tap
    order (exact float semantics, no fastmath). Runs without the GIL."""
    for b in range(images.shape[0]):
        for o in range(row_index.shape[0]):
            scratch[o] = 0.0
            for k in range(row_index.shape[1]):  # whole contiguous rows: vectorised
                source, weight = row_index[o, k], row_weight[o, k]
                for x in range(images.shape[2]):
                    for c in range(images.shape[3]):
                        scratch[o, x, c] += np.float32(images[b, source, x, c]) * weight
        for o in range(row_index.shape[0]):
            for p in range(column_index.shape[0]):
                for c in range(images.shape[3]):
                    total = np.float32(0.0)
                    for k in range(column_index.shape[1]):
                        total += scratch[o, column_index[p, k], c] * column_weight[p, k]
                    out[b, o, p, c] = total
