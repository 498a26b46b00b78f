"""RandomFlipOp (`keras.layers.RandomFlip`): in a training plan each image is flipped with
probability 1/2 (a uniform draw <= 0.5, as Keras). Keras 3 draws one value per image for all
the layer's flips, so with mode 'horizontal_and_vertical' an image is flipped both ways or not
at all. A flip is its own inverse: the backward flips the gradient with the same draws. The
identity in inference plans. Images are read and written in NHWC.
"""

import numpy as np

from .image_augment import ImageAugmentOp
from .image_random import draw_uniforms, new_counter
from .numba_config import PARALLEL, njit, prange

MODES = ("horizontal", "vertical", "horizontal_and_vertical")


@njit(**PARALLEL)
def flip_kernel(x, y, shape, uniforms, horizontal, vertical):
    """y[n] = x[n] flipped (columns if horizontal, rows if vertical) where uniforms[n] <= 0.5."""
    n_images, h, w, channels = shape[0], shape[1], shape[2], shape[3]
    source = x.reshape((n_images, h, w, channels))
    target = y.reshape((n_images, h, w, channels))
    for n in prange(n_images):
        flip = uniforms[n, 0] <= 0.5
        flip_rows, flip_columns = flip and vertical, flip and horizontal
        for r in range(h):
            read_r = h - 1 - r if flip_rows else r
            for c in range(w):
                read_c = w - 1 - c if flip_columns else c
                for k in range(channels):
                    target[n, r, c, k] = source[n, read_r, read_c, k]


class RandomFlipOp(ImageAugmentOp):
    """Args: name, mode (one of MODES), seed (int or None). After each training step
    `uniforms[:, 0] <= 0.5` says which images were flipped."""

    layer_name = "RandomFlip"

    def __init__(self, name, mode, seed=None):
        self.name, self.mode = name, mode
        self.counter = new_counter(seed)
        self.uniforms = np.zeros((0, 1), np.float64)

    def plan_draws(self, builder, shape):
        self.uniforms = np.zeros((shape[0], 1), np.float64)
        builder.add_forward(builder.kernel(draw_uniforms, (self.counter, self.uniforms),
                                           f"{self.name} draw"))

    def _flip(self, source, target, shape):
        horizontal, vertical = self.mode != "vertical", self.mode != "horizontal"
        return flip_kernel, (source, target, shape, self.uniforms, horizontal, vertical)

    def forward_kernel(self, source, output, shape):
        return self._flip(source, output, shape)

    def backward_kernel(self, source, grad, input_grad, shape):
        return self._flip(grad, input_grad, shape)
