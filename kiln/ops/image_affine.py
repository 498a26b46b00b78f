"""RandomAffineOp: the random geometric layers (RandomRotation, RandomZoom, RandomTranslation,
RandomShear) as one op. In a training plan each step draws per-image uniforms
(image_random.py), a serial kernel turns them into per-image affine maps exactly as the Keras
layer builds its matrix, and a parallel kernel samples every image through its map
(image_affine_kernels.py); the backward scatters the gradient back through the same maps. In an
inference plan the op is the identity, as the Keras layers are outside training.

The images are read in NHWC (a channels_first input is reordered once); the output is NHWC.
"""

import math

import numpy as np

from .image_affine_kernels import (
    FILL_MODES,
    INTERPOLATIONS,
    affine_backward_kernel,
    affine_forward_kernel,
)
from .image_augment import ImageAugmentOp
from .image_random import draw_uniforms, new_counter
from .numba_config import SERIAL, njit

ROTATION, ZOOM, TRANSLATION, SHEAR = range(4)
KINDS = {"RandomRotation": ROTATION, "RandomZoom": ZOOM, "RandomTranslation": TRANSLATION,
         "RandomShear": SHEAR}


@njit(**SERIAL)
def build_maps(uniforms, ranges, kind, h, w, maps):
    """maps[n] = (a0, a1, a2, b0, b1, b2) of image n from its uniforms, as Keras builds them.

    ranges: float64 (2, 2), the (lower, upper) of the layer's first and second factor
    (rotation: fractions of a turn; zoom: height, width ranges, width lower > upper meaning
    "the height's zoom"; translation: height, width fractions; shear: x, y)."""
    for n in range(maps.shape[0]):
        u = uniforms[n]
        first = ranges[0, 0] + u[0] * (ranges[0, 1] - ranges[0, 0])
        second = ranges[1, 0] + u[1] * (ranges[1, 1] - ranges[1, 0])
        if kind == ROTATION:
            # _compute_affine_matrix with centre (0.5, 0.5), no shift, scale or shear
            angle = np.float32(first * 360.0) * np.float32(math.pi / 180.0)
            cos, sin = np.float32(math.cos(angle)), np.float32(math.sin(angle))
            cx, cy = np.float32(0.5 * (w - 1)), np.float32(0.5 * (h - 1))
            maps[n, 0], maps[n, 1] = cos, -sin
            maps[n, 2] = cx - cx * cos - cy * -sin
            maps[n, 3], maps[n, 4] = sin, cos
            maps[n, 5] = cy - cx * sin - cy * cos
        elif kind == ZOOM:
            height_zoom = np.float32(1.0 + first)
            width_zoom = height_zoom if ranges[1, 0] > ranges[1, 1] else np.float32(1.0 + second)
            maps[n, 0], maps[n, 1] = width_zoom, 0.0
            maps[n, 2] = np.float32((w - 1.0) / 2.0) * (np.float32(1.0) - width_zoom)
            maps[n, 3], maps[n, 4] = 0.0, height_zoom
            maps[n, 5] = np.float32((h - 1.0) / 2.0) * (np.float32(1.0) - height_zoom)
        elif kind == TRANSLATION:
            maps[n, 0], maps[n, 1], maps[n, 2] = 1.0, 0.0, -np.float32(second * w)
            maps[n, 3], maps[n, 4], maps[n, 5] = 0.0, 1.0, -np.float32(first * h)
        else:
            # RandomShear: both factors take the sign of one more draw (u > 0.5: negative)
            sign = -1.0 if u[2] > 0.5 else 1.0
            maps[n, 0], maps[n, 1], maps[n, 2] = 1.0, np.float32(first * sign), 0.0
            maps[n, 3], maps[n, 4], maps[n, 5] = np.float32(second * sign), 1.0, 0.0


class RandomAffineOp(ImageAugmentOp):
    """Args: name, kind (a key of KINDS, also the layer's name in messages), ranges
    (((lower, upper), (lower, upper)) of the two factors, see build_maps), interpolation
    ('bilinear' or 'nearest'), fill_mode ('reflect', 'wrap', 'constant', 'nearest'),
    fill_value, seed (int or None).

    After each training step `maps` holds the affine maps used (one row per image)."""

    def __init__(self, name, kind, ranges, interpolation="bilinear", fill_mode="reflect",
                 fill_value=0.0, seed=None):
        self.name, self.kind = name, kind
        self.ranges = np.array(ranges, dtype=np.float64).reshape(2, 2)
        self.mode, self.bilinear = FILL_MODES[fill_mode], bool(INTERPOLATIONS[interpolation])
        self.fill_value = np.float32(fill_value)
        self.counter = new_counter(seed)
        self.maps = np.zeros((0, 6), np.float32)

    @property
    def layer_name(self):
        return self.kind

    def plan_draws(self, builder, shape):
        n, h, w = shape[0], shape[1], shape[2]
        uniforms = np.zeros((n, 3), np.float64)
        self.maps = np.zeros((n, 6), np.float32)
        builder.add_forward(builder.kernel(draw_uniforms, (self.counter, uniforms),
                                           f"{self.name} draw"))
        builder.add_forward(builder.kernel(
            build_maps, (uniforms, self.ranges, KINDS[self.kind], h, w, self.maps),
            f"{self.name} maps"))

    def forward_kernel(self, source, output, shape):
        return affine_forward_kernel, (source, output, shape, self.maps, self.mode,
                                       self.bilinear, self.fill_value)

    def backward_kernel(self, source, grad, input_grad, shape):
        return affine_backward_kernel, (grad, input_grad, shape, self.maps, self.mode,
                                        self.bilinear)
