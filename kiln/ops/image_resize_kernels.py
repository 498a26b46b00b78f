"""Separable resampling kernels of Resizing / CenterCrop / RandomCrop (image_resize.py).

Each output row reads a few input rows with fixed weights, and each output column a few input
columns: `taps` (output size, K) int64 indices and `weights` (output size, K) float32, computed
once when the plan is built (image_resize.py reproduces jax.image.resize's weights, which
Keras 3's JAX backend resizes with). An index -1 reads the fill value (pad_to_aspect_ratio's
border). A crop is the same thing with one tap of weight 1 per output pixel.

The backward is the transpose: every output gradient is scattered onto the input pixels it
read, with the same weights. The batch is split across threads by image, so no two threads
write the same input gradient.
"""

from .numba_config import PARALLEL, SERIAL, njit, prange


@njit(**PARALLEL)
def resample_forward_kernel(x, y, in_shape, out_shape, row_taps, row_weights, column_taps,
                            column_weights, fill_value):
    """y[n, i, j, :] = sum over a, b of row_weights[i, a] * column_weights[j, b]
    * x[n, row_taps[i, a], column_taps[j, b], :] (x, y flat NHWC)."""
    n_images, h, w, channels = in_shape[0], in_shape[1], in_shape[2], in_shape[3]
    out_h, out_w = out_shape[1], out_shape[2]
    source = x.reshape((n_images, h, w, channels))
    target = y.reshape((n_images, out_h, out_w, channels))
    for n in prange(n_images):
        for i in range(out_h):
            for j in range(out_w):
                for k in range(channels):
                    target[n, i, j, k] = 0
                for a in range(row_taps.shape[1]):
                    row, row_weight = row_taps[i, a], row_weights[i, a]
                    if row_weight == 0:
                        continue
                    for b in range(column_taps.shape[1]):
                        column, weight = column_taps[j, b], row_weight * column_weights[j, b]
                        if weight == 0:
                            continue
                        if row < 0 or column < 0:
                            for k in range(channels):
                                target[n, i, j, k] += weight * fill_value
                        else:
                            for k in range(channels):
                                target[n, i, j, k] += weight * source[n, row, column, k]


@njit(**PARALLEL)
def resample_backward_kernel(dy, dx, in_shape, out_shape, row_taps, row_weights, column_taps,
                             column_weights):
    """dx = the transpose of resample_forward_kernel applied to dy (the fill gets none)."""
    n_images, h, w, channels = in_shape[0], in_shape[1], in_shape[2], in_shape[3]
    out_h, out_w = out_shape[1], out_shape[2]
    grad = dy.reshape((n_images, out_h, out_w, channels))
    target = dx.reshape((n_images, h, w, channels))
    for n in prange(n_images):
        target[n] = 0
        for i in range(out_h):
            for a in range(row_taps.shape[1]):
                row, row_weight = row_taps[i, a], row_weights[i, a]
                if row_weight == 0 or row < 0:
                    continue
                for j in range(out_w):
                    for b in range(column_taps.shape[1]):
                        column, weight = column_taps[j, b], row_weight * column_weights[j, b]
                        if weight == 0 or column < 0:
                            continue
                        for k in range(channels):
                            target[n, row, column, k] += weight * grad[n, i, j, k]


@njit(**PARALLEL)
def random_crop_forward_kernel(x, y, in_shape, out_shape, offsets):
    """y[n] = the window of x[n] at rows offsets[0] + i, columns offsets[1] + j."""
    n_images, h, w, channels = in_shape[0], in_shape[1], in_shape[2], in_shape[3]
    out_h, out_w = out_shape[1], out_shape[2]
    source = x.reshape((n_images, h, w, channels))
    target = y.reshape((n_images, out_h, out_w, channels))
    top, left = offsets[0], offsets[1]
    for n in prange(n_images):
        for i in range(out_h):
            for j in range(out_w):
                for k in range(channels):
                    target[n, i, j, k] = source[n, top + i, left + j, k]


@njit(**PARALLEL)
def random_crop_backward_kernel(dy, dx, in_shape, out_shape, offsets):
    """dx[n] = dy[n] in the window random_crop_forward_kernel read, zero elsewhere."""
    n_images, h, w, channels = in_shape[0], in_shape[1], in_shape[2], in_shape[3]
    out_h, out_w = out_shape[1], out_shape[2]
    grad = dy.reshape((n_images, out_h, out_w, channels))
    target = dx.reshape((n_images, h, w, channels))
    top, left = offsets[0], offsets[1]
    for n in prange(n_images):
        target[n] = 0
        for i in range(out_h):
            for j in range(out_w):
                for k in range(channels):
                    target[n, top + i, left + j, k] = grad[n, i, j, k]


@njit(**SERIAL)
def crop_offsets(uniforms, spans, offsets):
    """offsets[d] = int(uniforms[0, d] * spans[d]): Keras's int32 cast of a uniform draw in
    [0, input size - crop size + 1), one window for the whole batch."""
    for d in range(2):
        offsets[d] = min(int(uniforms[0, d] * spans[d]), spans[d] - 1)
