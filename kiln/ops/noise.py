"""Training-time noise layers: GaussianNoise (x + N(0, stddev)), GaussianDropout
(x * N(1, sqrt(rate / (1 - rate)))) and SpatialDropout2D (whole channels of an image dropped,
the rest scaled by 1 / (1 - rate)), and Dropout with a `noise_shape` (one draw per entry of the
noise shape, broadcast over its axes of size 1, e.g. (None, 1, 1, 1): whole samples, as
EfficientNet's stochastic depth). All are the identity in inference plans.

oneDNN has no random numbers: numba kernels draw them from a counter-based hash of the element
index and a per-step salt (as dropout.py), so no generator state is kept per thread, the
draws do not depend on the layout or on the thread count, and a backward can draw the same
numbers again instead of keeping them. SpatialDropout2DOp draws one mask value per (image,
channel), BroadcastDropoutOp one per entry of its mask dims; SpatialDropout2DOp applies it with
oneDNN's broadcasting binary mul, in any layout, both ways, and BroadcastDropoutOp with
outer_scale's kernel where the mask varies along the layout's outermost axes (whole samples,
in every layout: oneDNN runs its reference kernel there), else with broadcast_kernels'
elementwise kernel on unpadded float32 layouts, else as SpatialDropout2DOp.
"""

import numpy as np

from ..binding import constants as dnnl
from ..binding.descriptor import descriptor
from ..binding.memory import MemoryDesc
from . import broadcast_kernels as kernels
from .base import Op
from .dropout import _mix64, keep_threshold, step_salt
from .numba_config import PARALLEL, SERIAL, njit, prange
from .outer_scale import outer_run, outer_scale_call

TWO_PI = np.float32(2.0 * np.pi)
PLAIN_TAGS = {1: dnnl.a, 2: dnnl.ab, 3: dnnl.abc, 4: dnnl.abcd, 5: dnnl.abcde}


@njit(inline="always", **SERIAL)
def _normal(index, salt):
    """A standard normal draw for element `index` (Box-Muller on two 24-bit uniforms)."""
    h = _mix64(np.uint64(index) ^ salt)
    u1 = (np.float32(h >> np.uint64(40)) + np.float32(0.5)) * np.float32(1.0 / (1 << 24))
    u2 = (np.float32(h & np.uint64(0xFFFFFF)) + np.float32(0.5)) * np.float32(1.0 / (1 << 24))
    return np.sqrt(np.float32(-2.0) * np.log(u1)) * np.cos(TWO_PI * u2)


@njit(**SERIAL)
def next_salt(counter, salt):
    """This step's salt into salt[0]; counter = [seed, step] advances."""
    salt[0] = step_salt(counter)
    counter[1] += np.uint64(1)


@njit(**PARALLEL)
def gaussian_noise_kernel(x, y, stddev, salt):
    s = salt[0]
    for i in prange(x.size):
        y[i] = x[i] + stddev * _normal(i, s)


@njit(**PARALLEL)
def gaussian_dropout_kernel(x, y, stddev, salt):
    """y = x * (1 + stddev * z); also the backward, dx = dy * (1 + stddev * z), same salt."""
    s = salt[0]
    for i in prange(x.size):
        y[i] = x[i] * (np.float32(1.0) + stddev * _normal(i, s))


@njit(**SERIAL)
def channel_mask_kernel(mask, threshold, scale, counter):
    """mask[j] = scale when mask entry j (an (image, channel) pair, or an entry of a noise shape)
    is kept, else 0; a new draw every step."""
    salt = step_salt(counter)
    for j in range(mask.size):
        bits = _mix64(np.uint64(j) ^ salt) >> np.uint64(48)
        mask[j] = scale if bits >= threshold else np.float32(0.0)
    counter[1] += np.uint64(1)


def _counter(seed):
    seed = np.random.randint(0, 2**62) if seed is None else seed
    return np.array([int(seed) % 2**64, 0], dtype=np.uint64)  # [seed, step]


def _check_f32(x, who):
    if x.memory.desc.data_type != dnnl.f32:
        raise ValueError(f"{who}: bfloat16 activations are not supported yet (use the "
                         "float32 policy for this layer)")


class GaussianNoiseOp(Op):
    """Args: name, stddev (>= 0), seed (int or None)."""

    def __init__(self, name, stddev, seed=None):
        self.name, self.stddev = name, float(stddev)
        self.counter, self.salt = _counter(seed), np.zeros(1, np.uint64)

    def output_dims(self, input_dims):
        return tuple(input_dims)

    def forward(self, builder, x, need_input_grad=True):
        if not builder.training or self.stddev == 0:
            return x, lambda output_grad: output_grad
        _check_f32(x, f"GaussianNoise '{self.name}'")
        output = builder.allocate(x.memory.desc)
        builder.add_forward(builder.kernel(next_salt, (self.counter, self.salt),
                                           f"{self.name} salt"))
        builder.add_forward(builder.memory_kernel(
            gaussian_noise_kernel, (x.memory, output, np.float32(self.stddev), self.salt),
            f"{self.name} forward"))
        return x.with_memory(output), lambda output_grad: output_grad


class GaussianDropoutOp(Op):
    """Args: name, rate (in [0, 1)), seed (int or None)."""

    def __init__(self, name, rate, seed=None):
        self.name, self.rate = name, float(rate)
        self.counter, self.salt = _counter(seed), np.zeros(1, np.uint64)

    def output_dims(self, input_dims):
        return tuple(input_dims)

    def forward(self, builder, x, need_input_grad=True):
        if not builder.training or self.rate == 0:
            return x, lambda output_grad: output_grad
        _check_f32(x, f"GaussianDropout '{self.name}'")
        desc = x.memory.desc
        stddev = np.float32(np.sqrt(self.rate / (1.0 - self.rate)))
        output = builder.allocate(desc)
        builder.add_forward(builder.kernel(next_salt, (self.counter, self.salt),
                                           f"{self.name} salt"))
        builder.add_forward(builder.memory_kernel(
            gaussian_dropout_kernel, (x.memory, output, stddev, self.salt),
            f"{self.name} forward"))

        def backward(output_grad):
            if not need_input_grad:
                return None
            grad = builder.reorder(output_grad, desc, f"{self.name} gradient", backward=True)
            input_grad = grad if builder.writable(grad) else builder.allocate(desc)
            builder.add_backward(builder.memory_kernel(
                gaussian_dropout_kernel, (grad, input_grad, stddev, self.salt),
                f"{self.name} backward"))
            return input_grad

        return x.with_memory(output), backward


class SpatialDropout2DOp(Op):
    """Args: name, rate (in [0, 1)), seed (int or None), kind (the layer's name in messages:
    SpatialDropout1D runs this op on its sequences seen as images)."""

    def __init__(self, name, rate, seed=None, kind="SpatialDropout2D"):
        self.name, self.rate, self.kind = name, float(rate), kind
        self.counter = _counter(seed)

    def output_dims(self, input_dims):
        return tuple(input_dims)

    def mask_dims(self, x):
        """Logical dims of the mask: one value per (image, channel)."""
        if len(x.dims) != 4 or x.flattened:
            raise ValueError(f"{self.kind} '{self.name}': expected a 4D input, got shape "
                             f"{x.keras_shape}")
        n, c = x.dims[:2]
        return (n, c, 1, 1)

    def forward(self, builder, x, need_input_grad=True):
        if not builder.training or self.rate == 0:
            return x, lambda output_grad: output_grad
        dims = self.mask_dims(x)
        _check_f32(x, f"{self.kind} '{self.name}'")
        desc = x.memory.desc
        mask_desc = MemoryDesc.with_tag(dims, dnnl.f32, PLAIN_TAGS[len(dims)])
        mask = builder.keep(builder.allocate(mask_desc))
        builder.add_forward(builder.memory_kernel(
            channel_mask_kernel, (mask, keep_threshold(self.rate),
                                  np.float32(1.0 / (1.0 - self.rate)), self.counter),
            f"{self.name} mask"))
        multiply = builder.primitive(*descriptor(
            "dnnl_binary_primitive_desc_create", "binary mul",
            f"{self.kind} '{self.name}' {desc}", dnnl.binary_mul, desc, mask_desc, desc))
        output = builder.allocate(desc)
        builder.add_forward(builder.bind(multiply, {dnnl.ARG_SRC: x.memory, dnnl.ARG_SRC_1: mask,
                                                    dnnl.ARG_DST: output},
                                         f"{self.name} forward"))

        def backward(output_grad):
            if not need_input_grad:
                return None
            grad = builder.reorder(output_grad, desc, f"{self.name} gradient", backward=True)
            input_grad = grad if builder.writable(grad) else builder.allocate(desc)
            builder.add_backward(builder.bind(multiply, {
                dnnl.ARG_SRC: grad, dnnl.ARG_SRC_1: mask, dnnl.ARG_DST: input_grad},
                f"{self.name} backward"))
            return input_grad

        return x.with_memory(output), backward


class BroadcastDropoutOp(SpatialDropout2DOp):
    """Dropout with a noise shape: one keep-or-drop draw per entry of the mask, broadcast over
    the input's axes where the mask has size 1.

    Args: name, rate (in [0, 1)), seed (int or None), mask_axes (the logical axes, (N, C, H,
    W) order for 4D, along which the mask varies: (0,) drops whole samples)."""

    def __init__(self, name, rate, seed=None, mask_axes=(0,)):
        super().__init__(name, rate, seed, kind="Dropout")
        self.mask_axes = tuple(mask_axes)

    def mask_dims(self, x):
        if x.flattened:
            raise ValueError(f"Dropout '{self.name}': noise_shape on an input flattened from "
                             f"4D is not supported, got shape {x.keras_shape}")
        return tuple(d if i in self.mask_axes else 1 for i, d in enumerate(x.dims))

    def forward(self, builder, x, need_input_grad=True):
        """The mask as SpatialDropout2DOp draws it; applied by outer_scale's kernel (f32 or
        bf16) when its varying axes are the layout's outermost (whole samples: always), else
        by broadcast_kernels.elementwise_kernel on an unpadded f32 layout, else by oneDNN's
        broadcasting binary mul (float32; its reference kernel for most such patterns)."""
        if not builder.training or self.rate == 0:
            return x, lambda output_grad: output_grad
        dims = self.mask_dims(x)
        desc = x.memory.desc
        mask_desc = MemoryDesc.with_tag(dims, dnnl.f32, PLAIN_TAGS[len(dims)])
        inner = outer_run(desc, x.dims, self.mask_axes)
        if inner is not None:
            def apply(mask, source, target, label):
                return outer_scale_call(builder, source, target, mask, inner, label)
        elif elementwise_strides(desc, mask_desc) is not None:
            def apply(mask, source, target, label):
                shape, strides = elementwise_strides(desc, mask_desc)
                return builder.memory_kernel(kernels.elementwise_kernel, (
                    np.int64(kernels.MULTIPLY), target, source, mask, source, shape, strides),
                    label)
        else:
            return super().forward(builder, x, need_input_grad)
        mask = builder.keep(builder.allocate(mask_desc))
        builder.add_forward(builder.memory_kernel(
            channel_mask_kernel, (mask, keep_threshold(self.rate),
                                  np.float32(1.0 / (1.0 - self.rate)), self.counter),
            f"{self.name} mask"))
        output = builder.allocate(desc)
        builder.add_forward(apply(mask, x.memory, output, f"{self.name} forward"))

        def backward(output_grad):
            if not need_input_grad:
                return None
            grad = builder.reorder(output_grad, desc, f"{self.name} gradient", backward=True)
            input_grad = grad if builder.writable(grad) else builder.allocate(desc)
            builder.add_backward(apply(mask, grad, input_grad, f"{self.name} backward"))
            return input_grad

        return x.with_memory(output), backward


def elementwise_strides(desc, mask_desc):
    """(shape, strides) of broadcast_kernels.elementwise_kernel computing out = x * mask with
    out and x in `desc` (float32, unpadded) and the mask in `mask_desc`, or None."""
    axes = kernels.physical_axes(desc)
    if axes is None:
        return None
    full, mask = (kernels.operand_strides(axes, d.dims, d) for d in (desc, mask_desc))
    if full is None or mask is None:
        return None
    return kernels.split_rows(*kernels.plan_axes(axes, [full, full, mask, [0] * len(axes)]))
