"""RandomGrayscaleOp (`keras.layers.RandomGrayscale`): in a training plan each image is turned to
grayscale with probability `factor` (a uniform draw below it, as Keras): every channel becomes
0.2989 R + 0.5870 G + 0.1140 B (keras.ops.image.rgb_to_grayscale's weights), so the output
keeps 3 channels. The backward is the transpose (dR = 0.2989 * the sum of the channels'
gradients, ...). The identity in inference plans. Images are read and written in NHWC.
"""

import numpy as np

from .image_augment import ImageAugmentOp
from .image_random import draw_uniforms, new_counter
from .numba_config import PARALLEL, njit, prange

WEIGHTS = np.array([0.2989, 0.5870, 0.1140], np.float32)


@njit(**PARALLEL)
def grayscale_kernel(x, y, shape, uniforms, factor, weights, transpose):
    """y[n] = grayscale x[n] where uniforms[n] < factor, else x[n]; with `transpose`, the
    backward: y[n, ..., c] = weights[c] * sum of x[n, ..., :] for those images."""
    n_images, pixels = shape[0], shape[1] * shape[2]
    source = x.reshape((n_images, pixels, 3))
    target = y.reshape((n_images, pixels, 3))
    for n in prange(n_images):
        apply = uniforms[n, 0] < factor
        for p in range(pixels):
            if not apply:
                for k in range(3):
                    target[n, p, k] = source[n, p, k]
            elif transpose:
                total = source[n, p, 0] + source[n, p, 1] + source[n, p, 2]
                for k in range(3):
                    target[n, p, k] = weights[k] * total
            else:
                gray = (weights[0] * source[n, p, 0] + weights[1] * source[n, p, 1]
                        + weights[2] * source[n, p, 2])
                for k in range(3):
                    target[n, p, k] = gray


class RandomGrayscaleOp(ImageAugmentOp):
    """Args: name, factor (probability in [0, 1]), seed. After each training step
    `uniforms[:, 0] < factor` says which images were turned gray."""

    layer_name = "RandomGrayscale"

    def __init__(self, name, factor, seed=None):
        self.name, self.factor = name, float(factor)
        self.counter = new_counter(seed)
        self.uniforms = np.zeros((0, 1), np.float64)

    def check_input(self, x, who):
        super().check_input(x, who)
        if x.dims[1] != 3:
            raise ValueError(f"{who}: expected images of 3 channels (RGB), got shape "
                             f"{x.keras_shape}")

    def plan_draws(self, builder, shape):
        self.uniforms = np.zeros((shape[0], 1), np.float64)
        builder.add_forward(builder.kernel(draw_uniforms, (self.counter, self.uniforms),
                                           f"{self.name} draw"))

    def forward_kernel(self, source, output, shape):
        return grayscale_kernel, (source, output, shape, self.uniforms, self.factor, WEIGHTS,
                                  False)

    def backward_kernel(self, source, grad, input_grad, shape):
        return grayscale_kernel, (grad, input_grad, shape, self.uniforms, self.factor,
                                  WEIGHTS, True)
