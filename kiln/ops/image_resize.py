"""ResizeOp (`keras.layers.Resizing`, `keras.layers.CenterCrop`) and RandomCropOp
(`keras.layers.RandomCrop`), as separable resampling kernels (image_resize_kernels.py).

Resizing reproduces jax.image.resize, which Keras 3's JAX backend calls: for every axis whose
size changes, output sample i reads the input at (i + 0.5) * in / out - 0.5 through the
method's kernel (triangle for 'bilinear', Keys' cubic with a = -0.5 for 'bicubic', Lanczos for
'lanczos3' / 'lanczos5'), weights normalized over the input samples that exist; 'nearest' reads
floor((i + 0.5) * in / out); 'area' weighs input pixels by their overlap with the output
pixel's extent (jax.image.resize's 'area', which Keras's JAX backend does not offer). With
antialias the kernel is stretched by in / out when shrinking. crop_to_aspect_ratio first
crops the largest centred window of the target's aspect ratio; pad_to_aspect_ratio first
pads the image (both sides by the same amount) with fill_value. The weights are computed once
in numpy when the plan is built; the kernels apply them each step.

CenterCrop reads the centred window when the image is large enough, else resizes as Keras's
smart_resize does (crop to the aspect ratio, then bilinear). Both run in every plan.

RandomCrop, in a training plan, crops one window at a random offset for the whole batch (Keras
draws one offset per call, uniform over the positions), or, when the image is not larger than
the crop in both axes, the centred aspect-ratio window resized to the crop size. Outside
training it does the latter too, as Keras's documentation says ("at inference time ... the
largest possible window in the image that matches the target aspect ratio"); Keras 3.15's
code returns the input unchanged there instead, an output of another shape than the layer
declares, which a following Flatten / Dense rejects.
"""

import numpy as np

from ..binding import constants as dnnl
from ..binding.memory import MemoryDesc
from .base import Op
from .image_random import check_image_input, draw_uniforms, new_counter
from .image_resize_kernels import (
    crop_offsets,
    random_crop_backward_kernel,
    random_crop_forward_kernel,
    resample_backward_kernel,
    resample_forward_kernel,
)

INTERPOLATIONS = ("bilinear", "nearest", "bicubic", "lanczos3", "lanczos5", "area")
F32 = np.float32


def _kernel(method, x):
    if method == "bilinear":
        return np.maximum(F32(0), F32(1) - x)
    if method == "bicubic":  # Keys, a = -0.5
        out = ((F32(1.5) * x - F32(2.5)) * x) * x + F32(1)
        out = np.where(x >= 1, ((F32(-0.5) * x + F32(2.5)) * x - F32(4)) * x + F32(2), out)
        return np.where(x >= 2, F32(0), out).astype(F32)
    radius = F32(3 if method == "lanczos3" else 5)
    y = radius * np.sin(F32(np.pi) * x) * np.sin(F32(np.pi) * x / radius)
    out = np.where(x > F32(1e-3), y / np.where(x != 0, F32(np.pi ** 2) * x * x, F32(1)), F32(1))
    return np.where(x > radius, F32(0), out).astype(F32)


def axis_weights(in_size, out_size, method, antialias=False):
    """(in_size, out_size) float32 weights of one axis, as jax.image.resize computes them."""
    if in_size == out_size:
        return np.eye(in_size, dtype=F32)
    if method == "nearest":
        picks = np.floor((np.arange(out_size, dtype=F32) + F32(0.5)) * F32(in_size)
                         / F32(out_size)).astype(np.int64)
        weights = np.zeros((in_size, out_size), F32)
        weights[picks, np.arange(out_size)] = 1
        return weights
    inv_scale = F32(1) / F32(out_size / in_size)
    kernel_scale = max(inv_scale, F32(1)) if antialias else F32(1)
    sample = (np.arange(out_size, dtype=F32) + F32(0.5)) * inv_scale - F32(0.5)
    if method == "area":  # the overlap of output pixel i's extent with input pixel j's
        left = np.arange(out_size, dtype=F32) * inv_scale
        start = np.arange(in_size, dtype=F32)
        weights = np.maximum(F32(0), np.minimum((left + inv_scale)[None, :], start[:, None] + 1)
                             - np.maximum(left[None, :], start[:, None])).astype(F32)
    else:
        x = np.abs(sample[None, :] - np.arange(in_size, dtype=F32)[:, None]) / kernel_scale
        weights = _kernel(method, x.astype(F32))
    total = weights.sum(axis=0, keepdims=True, dtype=F32)
    weights = np.where(np.abs(total) > 1000 * np.finfo(F32).eps,
                       weights / np.where(total != 0, total, F32(1)), F32(0))
    inside = (sample >= -0.5) & (sample <= in_size - 0.5)
    return np.where(inside[None, :], weights, F32(0)).astype(F32)


def compact(weights, first=0, size=None):
    """(taps, weights) arrays of shape (out, K) from an (in, out) matrix whose input index p
    is image index first + p; indices outside [0, size) become -1 (the fill value)."""
    count = max(1, int((weights != 0).sum(axis=0).max()))
    out = weights.shape[1]
    taps, values = np.zeros((out, count), np.int64), np.zeros((out, count), F32)
    for j in range(out):
        rows = np.nonzero(weights[:, j])[0]
        taps[j, :rows.size] = rows + first
        values[j, :rows.size] = weights[rows, j]
    if size is not None:
        taps[(taps < 0) | (taps >= size)] = -1
    return taps, values


def aspect_crop(height, width, target_height, target_width):
    """Keras's centred window of the target's aspect ratio: (top, left, height, width)."""
    crop_height = max(min(height, int(float(width * target_height) / target_width)), 1)
    crop_width = max(min(width, int(float(height * target_width) / target_height)), 1)
    return (int(float(height - crop_height) / 2), int(float(width - crop_width) / 2),
            crop_height, crop_width)


def resize_plan(height, width, target, interpolation="bilinear", crop=False, pad=False,
                antialias=False):
    """(row taps, row weights, column taps, column weights) of Keras's resize of an image of
    height x width to target = (height, width)."""
    axes = []
    if crop:
        top, left, crop_height, crop_width = aspect_crop(height, width, *target)
        spans = ((top, crop_height, None), (left, crop_width, None))
    elif pad:
        pad_height = max(height, int(float(width * target[0]) / target[1]))
        pad_width = max(width, int(float(height * target[1]) / target[0]))
        top, left = int(float(pad_height - height) / 2), int(float(pad_width - width) / 2)
        if top > 0:
            spans = ((-top, height + 2 * top, height), (0, width, width))
        elif left > 0:
            spans = ((0, height, height), (-left, width + 2 * left, width))
        else:
            spans = ((0, height, None), (0, width, None))
    else:
        spans = ((0, height, None), (0, width, None))
    for (first, length, size), out in zip(spans, target, strict=True):
        axes.extend(compact(axis_weights(length, out, interpolation, antialias), first, size))
    return tuple(axes)


def center_crop_plan(height, width, target):
    """CenterCrop's taps: the centred window, or smart_resize's crop and bilinear resize."""
    if height >= target[0] and width >= target[1]:
        top, left = (height - target[0]) // 2, (width - target[1]) // 2
        return (*compact(np.eye(target[0], dtype=F32), top),
                *compact(np.eye(target[1], dtype=F32), left))
    return resize_plan(height, width, target, "bilinear", crop=True)


def _nhwc(dims):
    return MemoryDesc.with_tag(dims, dnnl.f32, dnnl.acdb)


class ResizeOp(Op):
    """Args: name, size (height, width), kind ('Resizing' or 'CenterCrop', for messages and
    CenterCrop's rule), interpolation, crop_to_aspect_ratio, pad_to_aspect_ratio, fill_value,
    antialias."""

    def __init__(self, name, size, kind="Resizing", interpolation="bilinear",
                 crop_to_aspect_ratio=False, pad_to_aspect_ratio=False, fill_value=0.0,
                 antialias=False):
        self.name, self.size, self.kind = name, tuple(size), kind
        self.interpolation, self.antialias = interpolation, antialias
        self.crop, self.pad = crop_to_aspect_ratio, pad_to_aspect_ratio
        self.fill_value = F32(fill_value)

    def output_dims(self, input_dims):
        n, c = input_dims[:2]
        return (n, c, *self.size)

    def taps(self, height, width):
        if self.kind == "CenterCrop":
            return center_crop_plan(height, width, self.size)
        return resize_plan(height, width, self.size, self.interpolation, self.crop, self.pad,
                           self.antialias)

    def forward(self, builder, x, need_input_grad=True):
        check_image_input(x, f"{self.kind} '{self.name}'")
        n, c, h, w = x.dims
        out_dims = self.output_dims(x.dims)
        source = builder.reorder(x.memory, _nhwc(x.dims), f"{self.name} input to nhwc")
        taps = self.taps(h, w)
        in_shape = np.array([n, h, w, c], np.int64)
        out_shape = np.array([n, *self.size, c], np.int64)
        output = builder.allocate(_nhwc(out_dims))
        builder.add_forward(builder.memory_kernel(
            resample_forward_kernel, (source, output, in_shape, out_shape, *taps,
                                      self.fill_value), f"{self.name} forward"))

        def backward(output_grad):
            if not need_input_grad:
                return None
            grad = builder.reorder(output_grad, _nhwc(out_dims), f"{self.name} gradient to "
                                   "nhwc", backward=True)
            input_grad = builder.allocate(_nhwc(x.dims))
            builder.add_backward(builder.memory_kernel(
                resample_backward_kernel, (grad, input_grad, in_shape, out_shape, *taps),
                f"{self.name} backward"))
            return input_grad

        return x.with_memory(output), backward


class RandomCropOp(Op):
    """Args: name, size (height, width), seed. After each training step `offsets` holds the
    (top, left) of the window cropped."""

    def __init__(self, name, size, seed=None):
        self.name, self.size = name, tuple(size)
        self.counter = new_counter(seed)
        self.offsets = np.zeros(2, np.int64)

    def output_dims(self, input_dims):
        n, c = input_dims[:2]
        return (n, c, *self.size)

    def forward(self, builder, x, need_input_grad=True):
        check_image_input(x, f"RandomCrop '{self.name}'")
        n, c, h, w = x.dims
        if not (builder.training and h > self.size[0] and w > self.size[1]):
            return ResizeOp(self.name, self.size, "RandomCrop", crop_to_aspect_ratio=True) \
                .forward(builder, x, need_input_grad)
        out_dims = self.output_dims(x.dims)
        source = builder.reorder(x.memory, _nhwc(x.dims), f"{self.name} input to nhwc")
        in_shape = np.array([n, h, w, c], np.int64)
        out_shape = np.array([n, *self.size, c], np.int64)
        uniforms = np.zeros((1, 2), np.float64)
        spans = np.array([h - self.size[0] + 1, w - self.size[1] + 1], np.int64)
        builder.add_forward(builder.kernel(draw_uniforms, (self.counter, uniforms),
                                           f"{self.name} draw"))
        builder.add_forward(builder.kernel(crop_offsets, (uniforms, spans, self.offsets),
                                           f"{self.name} offsets"))
        output = builder.allocate(_nhwc(out_dims))
        builder.add_forward(builder.memory_kernel(
            random_crop_forward_kernel, (source, output, in_shape, out_shape, self.offsets),
            f"{self.name} forward"))

        def backward(output_grad):
            if not need_input_grad:
                return None
            grad = builder.reorder(output_grad, _nhwc(out_dims), f"{self.name} gradient to "
                                   "nhwc", backward=True)
            input_grad = builder.allocate(_nhwc(x.dims))
            builder.add_backward(builder.memory_kernel(
                random_crop_backward_kernel, (grad, input_grad, in_shape, out_shape,
                                              self.offsets), f"{self.name} backward"))
            return input_grad

        return x.with_memory(output), backward
