"""MixOp: the layers that mix images of a batch or erase a box of them, as Keras 3 draws them:

    MixUp          y[n] = w x[n] + (1 - w) x[p(n)], w ~ Beta(alpha, alpha) per image, p a
                   random permutation of the batch
    CutMix         y[n] = x[p(n)] inside a box of x[n], x[n] elsewhere; per batch
                   a ~ U(factor) + 1e-6, per image w ~ Beta(a, a), the box's sides
                   sqrt(1 - w) times the image's, placed uniformly
    RandomErasing  with probability U(factor) per image, a box whose sides are sqrt(U(scale))
                   times the image's, placed uniformly, is filled with fill_value (or normal
                   noise times value_range's upper end when it is None), clipped to value_range

Only the images are mixed: inside a model Keras's layers see no labels either. A serial
kernel draws the step's permutation, weights and boxes (numba's generator seeded from the
step's counter-based salt, so a seed fixes the sequence); a parallel kernel over the images
writes the output; the backward is the transpose (through the inverse permutation, so each
thread writes only its own image's gradient). The identity in inference plans. Images are
read and written in NHWC.
"""

import math

import numpy as np

from .dropout import step_salt
from .image_augment import ImageAugmentOp
from .image_random import new_counter
from .noise import _normal
from .numba_config import PARALLEL, SERIAL, njit, prange

MIXUP, CUTMIX, ERASING = range(3)
KINDS = {"MixUp": MIXUP, "CutMix": CUTMIX, "RandomErasing": ERASING}


@njit(**SERIAL)
def _beta(a):
    """A Beta(a, a) draw from two gamma draws (0 or 1 at random when both underflow)."""
    g1, g2 = np.random.gamma(a, 1.0), np.random.gamma(a, 1.0)
    if g1 + g2 > 0:
        return g1 / (g1 + g2)
    return 1.0 if np.random.random() < 0.5 else 0.0


@njit(**SERIAL)
def _span(length, side, start):
    """(first, end) of a box side of `side` samples placed at fraction `start` of the room."""
    first = np.float32(start * (length - side))
    return first, first + np.float32(side)


@njit(**SERIAL)
def draw_mix(counter, kind, params, h, w, salt, perm, inverse, weights, boxes, apply):
    """This step's draws; params = (alpha) for MixUp, (factor lower, upper) for CutMix,
    (factor lower, upper, scale lower, upper) for RandomErasing."""
    salt[0] = step_salt(counter)
    counter[1] += np.uint64(1)
    np.random.seed(np.int64(salt[0] & np.uint64(0x7FFFFFFF)))
    n = perm.size
    perm[:] = np.random.permutation(n)
    for i in range(n):
        inverse[perm[i]] = i
    alpha = params[0] + np.random.random() * (params[1] - params[0]) + 1e-6 \
        if kind == CUTMIX else params[0]
    for i in range(n):
        if kind == MIXUP:
            weights[i] = _beta(alpha)
            continue
        if kind == CUTMIX:
            weights[i] = _beta(alpha)
            width_ratio = height_ratio = math.sqrt(1.0 - weights[i])
        else:
            width_ratio = math.sqrt(params[2] + np.random.random() * (params[3] - params[2]))
            height_ratio = math.sqrt(params[2] + np.random.random() * (params[3] - params[2]))
        boxes[i, 0], boxes[i, 1] = _span(w, np.float32(width_ratio * w), np.random.random())
        boxes[i, 2], boxes[i, 3] = _span(h, np.float32(height_ratio * h), np.random.random())
        if kind == ERASING:
            probability = params[0] + np.random.random() * (params[1] - params[0])
            apply[i] = np.random.random() < probability


@njit(inline="always", **SERIAL)
def _inside(boxes, n, r, c):
    return boxes[n, 0] <= c < boxes[n, 1] and boxes[n, 2] <= r < boxes[n, 3]


@njit(**PARALLEL)
def mix_forward_kernel(x, y, shape, kind, perm, weights, boxes, apply, fill, random_fill,
                       low, high, salt):
    n_images, h, w, channels = shape[0], shape[1], shape[2], shape[3]
    source = x.reshape((n_images, h, w, channels))
    target = y.reshape((n_images, h, w, channels))
    for n in prange(n_images):
        m = perm[n]
        mine = np.float32(weights[n])
        for r in range(h):
            for c in range(w):
                inside = kind != MIXUP and _inside(boxes, n, r, c)
                for k in range(channels):
                    if kind == MIXUP:
                        value = mine * source[n, r, c, k] \
                            + (np.float32(1.0) - mine) * source[m, r, c, k]
                    elif kind == CUTMIX:
                        value = source[m, r, c, k] if inside else source[n, r, c, k]
                    elif inside and apply[n]:
                        if random_fill:
                            index = ((n * h + r) * w + c) * channels + k
                            value = _normal(index, salt[0]) * high
                        else:
                            value = fill[k % fill.size]
                        value = min(max(value, low), high)
                    else:
                        value = source[n, r, c, k]
                    target[n, r, c, k] = value


@njit(**PARALLEL)
def mix_backward_kernel(dy, dx, shape, kind, inverse, weights, boxes, apply):
    """dx[m] = the gradients of the outputs that read image m (output inverse[m] reads it as
    the mixed-in image)."""
    n_images, h, w, channels = shape[0], shape[1], shape[2], shape[3]
    grad = dy.reshape((n_images, h, w, channels))
    target = dx.reshape((n_images, h, w, channels))
    for m in prange(n_images):
        n = inverse[m]
        for r in range(h):
            for c in range(w):
                for k in range(channels):
                    if kind == MIXUP:
                        value = np.float32(weights[m]) * grad[m, r, c, k] \
                            + np.float32(1.0 - weights[n]) * grad[n, r, c, k]
                    elif kind == CUTMIX:
                        value = np.float32(0.0) if _inside(boxes, m, r, c) else grad[m, r, c, k]
                        if _inside(boxes, n, r, c):
                            value += grad[n, r, c, k]
                    else:
                        erased = apply[m] and _inside(boxes, m, r, c)
                        value = np.float32(0.0) if erased else grad[m, r, c, k]
                    target[m, r, c, k] = value


class MixOp(ImageAugmentOp):
    """Args: name, kind (a key of KINDS), params (see draw_mix), seed; RandomErasing also
    fill_value (None, a number or one per channel) and value_range. After each training step
    `perm`, `weights`, `boxes` ((x0, x1, y0, y1) per image) and `apply` hold the draws."""

    def __init__(self, name, kind, params, seed=None, fill_value=None, value_range=(0, 255)):
        self.name, self.kind = name, kind
        self.params = np.array(params, np.float64)
        self.random_fill = fill_value is None
        self.fill = np.atleast_1d(np.array(0.0 if fill_value is None else fill_value,
                                           np.float32))
        self.low, self.high = (np.float32(v) for v in value_range)
        self.counter, self.salt = new_counter(seed), np.zeros(1, np.uint64)

    @property
    def layer_name(self):
        return self.kind

    def plan_draws(self, builder, shape):
        n, h, w = shape[0], shape[1], shape[2]
        self.perm, self.inverse = np.zeros(n, np.int64), np.zeros(n, np.int64)
        self.weights, self.boxes = np.ones(n, np.float64), np.zeros((n, 4), np.float32)
        self.apply = np.zeros(n, np.bool_)
        builder.add_forward(builder.kernel(
            draw_mix, (self.counter, KINDS[self.kind], self.params, h, w, self.salt,
                       self.perm, self.inverse, self.weights, self.boxes, self.apply),
            f"{self.name} draw"))

    def forward_kernel(self, source, output, shape):
        return mix_forward_kernel, (source, output, shape, KINDS[self.kind], self.perm,
                                    self.weights, self.boxes, self.apply, self.fill,
                                    self.random_fill, self.low, self.high, self.salt)

    def backward_kernel(self, source, grad, input_grad, shape):
        return mix_backward_kernel, (grad, input_grad, shape, KINDS[self.kind], self.inverse,
                                     self.weights, self.boxes, self.apply)
