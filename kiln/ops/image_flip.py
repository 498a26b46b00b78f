"""RandomFlipOp (`keras.layers.RandomFlip`): in a training plan each image is flipped with
probability 1/2 (a uniform draw <= 0.5, as Keras). Keras 3 draws one value per image for all
the layer's flips, so with mode 'horizontal_and_vertical' an image is flipped both ways or not
at all. A flip is its own inverse: the backward flips the gradient with the same draws. The
identity in inference plans. Images are read and written in NHWC.
"""

import numpy as np

from ..binding import constants as dnnl
from ..binding.memory import MemoryDesc
from .base import Op
from .image_random import check_image_input, draw_uniforms, new_counter
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


class RandomFlipOp(Op):
    """Args: name, mode (one of MODES), seed (int or None). After each training step
    `uniforms[:, 0] <= 0.5` says which images were flipped."""

    def __init__(self, name, mode, seed=None):
        self.name, self.mode = name, mode
        self.counter = new_counter(seed)
        self.uniforms = np.zeros((0, 1), np.float64)

    def output_dims(self, input_dims):
        return tuple(input_dims)

    def forward(self, builder, x, need_input_grad=True):
        if not builder.training:
            return x, lambda output_grad: output_grad
        check_image_input(x, f"RandomFlip '{self.name}'")
        n, c, h, w = x.dims
        nhwc = MemoryDesc.with_tag(x.dims, dnnl.f32, dnnl.acdb)
        source = builder.reorder(x.memory, nhwc, f"{self.name} input to nhwc")
        self.uniforms = np.zeros((n, 1), np.float64)
        shape = np.array([n, h, w, c], np.int64)
        horizontal, vertical = self.mode != "vertical", self.mode != "horizontal"
        builder.add_forward(builder.kernel(draw_uniforms, (self.counter, self.uniforms),
                                           f"{self.name} draw"))
        output = builder.allocate(nhwc)
        builder.add_forward(builder.memory_kernel(
            flip_kernel, (source, output, shape, self.uniforms, horizontal, vertical),
            f"{self.name} forward"))

        def backward(output_grad):
            if not need_input_grad:
                return None
            grad = builder.reorder(output_grad, nhwc, f"{self.name} gradient to nhwc",
                                   backward=True)
            input_grad = builder.allocate(nhwc)
            builder.add_backward(builder.memory_kernel(
                flip_kernel, (grad, input_grad, shape, self.uniforms, horizontal, vertical),
                f"{self.name} backward"))
            return input_grad

        return x.with_memory(output), backward
