"""RandomGrayscaleOp (`keras.layers.RandomGrayscale`): in a training plan each image is turned to
grayscale with probability `factor` (a uniform draw below it, as Keras): every channel becomes
0.2989 R + 0.5870 G + 0.1140 B (keras.ops.image.rgb_to_grayscale's weights), so the output
keeps 3 channels. The backward is the transpose (dR = 0.2989 * the sum of the channels'
gradients, ...). The identity in inference plans. Images are read and written in NHWC.
"""

import numpy as np

from ..binding import constants as dnnl
from ..binding.memory import MemoryDesc
from .base import Op
from .image_random import check_image_input, draw_uniforms, new_counter
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


class RandomGrayscaleOp(Op):
    """Args: name, factor (probability in [0, 1]), seed. After each training step
    `uniforms[:, 0] < factor` says which images were turned gray."""

    def __init__(self, name, factor, seed=None):
        self.name, self.factor = name, float(factor)
        self.counter = new_counter(seed)
        self.uniforms = np.zeros((0, 1), np.float64)

    def output_dims(self, input_dims):
        return tuple(input_dims)

    def forward(self, builder, x, need_input_grad=True):
        if not builder.training:
            return x, lambda output_grad: output_grad
        who = f"RandomGrayscale '{self.name}'"
        check_image_input(x, who)
        n, c, h, w = x.dims
        if c != 3:
            raise ValueError(f"{who}: expected images of 3 channels (RGB), got shape "
                             f"{x.keras_shape}")
        nhwc = MemoryDesc.with_tag(x.dims, dnnl.f32, dnnl.acdb)
        source = builder.reorder(x.memory, nhwc, f"{self.name} input to nhwc")
        self.uniforms = np.zeros((n, 1), np.float64)
        shape = np.array([n, h, w, c], np.int64)
        builder.add_forward(builder.kernel(draw_uniforms, (self.counter, self.uniforms),
                                           f"{self.name} draw"))
        output = builder.allocate(nhwc)
        builder.add_forward(builder.memory_kernel(
            grayscale_kernel, (source, output, shape, self.uniforms, self.factor, WEIGHTS,
                               False), f"{self.name} forward"))

        def backward(output_grad):
            if not need_input_grad:
                return None
            grad = builder.reorder(output_grad, nhwc, f"{self.name} gradient to nhwc",
                                   backward=True)
            input_grad = builder.allocate(nhwc)
            builder.add_backward(builder.memory_kernel(
                grayscale_kernel, (grad, input_grad, shape, self.uniforms, self.factor,
                                   WEIGHTS, True), f"{self.name} backward"))
            return input_grad

        return x.with_memory(output), backward
