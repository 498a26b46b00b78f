"""RandomContrastOp and RandomBrightnessOp (`keras.layers.RandomContrast`, `RandomBrightness`):
one random factor per image, drawn each training step (image_random.py), applied by a parallel
kernel over the images, the result clipped to the layer's value_range, as Keras 3 does:

    contrast    y = clip((x - mean) * f + mean), mean per image and channel over H and W,
                f uniform in [1 - lower, 1 + upper]
    brightness  y = clip(x + d), d uniform in [lower, upper] times the value range's width

The backward is the exact derivative (zero where the result was clipped). Both are the
identity in inference plans. Images are read and written in NHWC.
"""

import numpy as np

from .image_augment import ImageAugmentOp
from .image_random import draw_uniforms, new_counter
from .numba_config import PARALLEL, njit, prange

CONTRAST, BRIGHTNESS = 0, 1


@njit(**PARALLEL)
def color_forward_kernel(x, y, shape, factors, kind, low, high):
    """y = the adjusted, clipped images; factors[n] is image n's contrast factor or shift."""
    n_images, h, w, channels = shape[0], shape[1], shape[2], shape[3]
    source = x.reshape((n_images, h * w, channels))
    target = y.reshape((n_images, h * w, channels))
    for n in prange(n_images):
        f = np.float32(factors[n])
        for k in range(channels):
            mean = np.float32(0.0)
            if kind == CONTRAST:
                total = 0.0
                for p in range(h * w):
                    total += source[n, p, k]
                mean = np.float32(total / (h * w))
            for p in range(h * w):
                if kind == CONTRAST:
                    value = (source[n, p, k] - mean) * f + mean
                else:
                    value = source[n, p, k] + f
                target[n, p, k] = min(max(value, low), high)


@njit(**PARALLEL)
def color_backward_kernel(x, dy, dx, shape, factors, kind, low, high):
    """dx from dy: dy where the result was not clipped, then, for contrast,
    f * g + (1 - f) * mean(g) over each image's channel."""
    n_images, h, w, channels = shape[0], shape[1], shape[2], shape[3]
    source = x.reshape((n_images, h * w, channels))
    grad = dy.reshape((n_images, h * w, channels))
    target = dx.reshape((n_images, h * w, channels))
    for n in prange(n_images):
        f = np.float32(factors[n])
        for k in range(channels):
            mean = np.float32(0.0)
            if kind == CONTRAST:
                total = 0.0
                for p in range(h * w):
                    total += source[n, p, k]
                mean = np.float32(total / (h * w))
            grad_total = 0.0
            for p in range(h * w):
                if kind == CONTRAST:
                    value = (source[n, p, k] - mean) * f + mean
                else:
                    value = source[n, p, k] + f
                g = grad[n, p, k] if low <= value <= high else np.float32(0.0)
                target[n, p, k] = g
                grad_total += g
            if kind == CONTRAST:
                shift = np.float32((1.0 - f) * grad_total / (h * w))
                for p in range(h * w):
                    target[n, p, k] = f * target[n, p, k] + shift


@njit(**PARALLEL)
def scale_draws(uniforms, factors, lower, upper, scale, offset):
    """factors[n] = (lower + u * (upper - lower)) * scale + offset."""
    for n in prange(factors.size):
        factors[n] = (lower + uniforms[n, 0] * (upper - lower)) * scale + offset


class _ColorOp(ImageAugmentOp):
    kind = None

    def __init__(self, name, factor, value_range=(0, 255), seed=None):
        self.name = name
        self.lower, self.upper = (float(v) for v in factor)
        self.low, self.high = (np.float32(v) for v in value_range)
        self.counter = new_counter(seed)
        self.factors = np.zeros(0, np.float32)

    def draw_range(self):
        """(lower, upper, scale, offset) of the per-image factor."""
        raise NotImplementedError

    def plan_draws(self, builder, shape):
        uniforms = np.zeros((shape[0], 1), np.float64)
        self.factors = np.zeros(shape[0], np.float32)
        builder.add_forward(builder.kernel(draw_uniforms, (self.counter, uniforms),
                                           f"{self.name} draw"))
        builder.add_forward(builder.kernel(scale_draws, (uniforms, self.factors,
                                                         *self.draw_range()),
                                           f"{self.name} factors"))

    def forward_kernel(self, source, output, shape):
        return color_forward_kernel, (source, output, shape, self.factors, self.kind,
                                      self.low, self.high)

    def backward_kernel(self, source, grad, input_grad, shape):
        return color_backward_kernel, (source, grad, input_grad, shape, self.factors,
                                       self.kind, self.low, self.high)


class RandomContrastOp(_ColorOp):
    """Args: name, factor ((lower, upper) as Keras stores it), value_range, seed. After each
    training step `factors` holds the contrast factor of every image."""

    layer_name, kind = "RandomContrast", CONTRAST

    def draw_range(self):
        return 1.0 - self.lower, 1.0 + self.upper, 1.0, 0.0


class RandomBrightnessOp(_ColorOp):
    """Args: name, factor ((lower, upper)), value_range, seed. After each training step
    `factors` holds the shift added to every image."""

    layer_name, kind = "RandomBrightness", BRIGHTNESS

    def draw_range(self):
        return self.lower, self.upper, float(self.high - self.low), 0.0
