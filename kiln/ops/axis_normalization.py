"""AxisNormalizationOp: the normalizations oneDNN 3.2 cannot run, as fused numba kernels
(axis_normalization_kernels.py): a layer normalization over axes that are not the last ones,
Keras's `rms_scaling`, RMSNormalization, UnitNormalization and GroupNormalization.

The input is read in its plain Keras order (a reorder only when its layout is another one) and
seen as the 4D array (A, S, G, K) the kernels take: one statistic per (a, g) over S * K
values. `keras_order_view` and `LayerView` / `GroupView` are shared with the oneDNN layer
normalization (layer_norm.py), which sees the same bytes as (rows, features).
"""

from dataclasses import dataclass

import numpy as np

from ..binding import constants as dnnl
from ..binding.memory import MemoryDesc
from . import axis_normalization_kernels as kernels
from .base import Op
from .reshape import keras_layout
from .tensor import CHANNELS_LAST, keras_shape


@dataclass(frozen=True)
class AxisView:
    """The (A, S, G, K) view of a Keras-order tensor, and how the weights are indexed."""

    A: int
    S: int
    G: int
    K: int
    weights_on_s: bool
    per_channel: int
    weight_count: int


def _product(values):
    return int(np.prod([int(v) for v in values], dtype=np.int64))


def layer_view(shape, axes, context):
    """Statistics over Keras axes `axes` (sorted, positive, consecutive) of `shape`; the
    weights have one entry per position in those axes."""
    if list(axes) != list(range(axes[0], axes[-1] + 1)):
        raise ValueError(f"{context}: argument axis must list consecutive axes (kiln "
                         f"normalizes over one block of axes), got {list(axes)}")
    first, last = axes[0], axes[-1]
    middle = _product(shape[first:last + 1])
    return AxisView(_product(shape[:first]) if shape[0] is not None else 0, middle,
                    _product(shape[last + 1:]), 1, True, 1, middle)


def group_view(shape, channel_axis, groups):
    """Statistics per (sample, group) over the group's channels and every other axis; the
    weights have one entry per channel."""
    after = _product(shape[channel_axis + 1:])
    channels = int(shape[channel_axis])
    return AxisView(0 if shape[0] is None else int(shape[0]), _product(shape[1:channel_axis]),
                    groups, channels // groups * after, False, after, channels)


def keras_order_view(builder, memory, dims, data_format, flattened, view_dims, label,
                     backward=False, data_type=dnnl.f32):
    """`memory` (logical `dims`, any layout and type) reordered to its plain Keras order in
    `data_type` (no call when it already is), seen with `view_dims` over the same bytes."""
    plain = builder.reorder(memory, keras_layout(dims, data_format, flattened, data_type),
                            label, backward=backward)
    return plain.view(MemoryDesc.with_tag(view_dims, data_type))


def in_type(builder, memory, data_type, dims, data_format, flattened, label, backward=False):
    """`memory` (plain Keras order) converted to `data_type` by a reorder (the forward list,
    or the backward one); `memory` itself when it has that type. Keras computes these
    normalizations in f32 whatever the activations' type, so a bf16 plan converts at the
    edges when the computation is f32."""
    if memory.desc.data_type == data_type:
        return memory
    return builder.reorder(memory, keras_layout(dims, data_format, flattened, data_type),
                           label, backward=backward)


def tensor_view(builder, view_desc, dims, data_format, flattened):
    """A new buffer of layout `view_desc` and the same bytes seen as the tensor `dims` in
    Keras order: (buffer, tensor memory)."""
    buffer = builder.allocate(view_desc)
    return buffer, buffer.view(keras_layout(dims, data_format, flattened,
                                            view_desc.data_type))


def weight_dims(count):
    return ((count,), dnnl.a)


class AxisNormalizationOp(Op):
    """Args:
        name, kind: the layer's name and class name (messages).
        view: a function of the input's Keras shape returning its AxisView.
        mode: a kernels mode (CENTERED, VARIANCE_SCALED, ROOT_MEAN_SQUARE, UNIT).
        epsilon; weights: the short names of the (gamma, beta) weights, None for absent.
        data_format, flattened: how Keras sees the input (fixes its Keras order).
    """

    def __init__(self, name, kind, view, mode, epsilon, weights=(None, None),
                 data_format=CHANNELS_LAST, flattened=False):
        self.name, self.kind, self.view, self.mode = name, kind, view, mode
        self.epsilon = float(epsilon)
        self.gamma, self.beta = weights
        self.data_format, self.flattened = data_format, flattened

    def _view(self, input_dims):
        return self.view(keras_shape(input_dims, self.data_format, self.flattened))

    def output_dims(self, input_dims):
        self._view(input_dims)
        return tuple(input_dims)

    def parameter_dims(self, input_dims):
        count = self._view(input_dims).weight_count
        return {short: weight_dims(count) for short in (self.gamma, self.beta) if short}

    def forward(self, builder, x, need_input_grad=True):
        view = self._view(x.dims)
        # the kernels compute in f32: bf16 activations are converted at the edges
        convert = (x.memory.desc.data_type, x.dims, self.data_format, self.flattened)
        flat = (int(np.prod(x.dims)),)
        source = keras_order_view(builder, x.memory, x.dims, self.data_format, self.flattened,
                                  flat, f"{self.name} input to Keras order")
        output, output_tensor = tensor_view(builder, MemoryDesc.with_tag(flat), x.dims,
                                            self.data_format, self.flattened)
        weight_desc = MemoryDesc.with_tag((view.weight_count,))
        unused = np.zeros(1, np.float32)
        gamma = builder.param(f"{self.name}/{self.gamma}", weight_desc) if self.gamma else unused
        beta = builder.param(f"{self.name}/{self.beta}", weight_desc) if self.beta else unused
        statistics = builder.allocate(MemoryDesc.with_tag((view.A * view.G * kernels.STATISTICS,)))
        shape = (view.A, view.S, view.G, view.K)
        layout = (view.weights_on_s, view.per_channel)
        builder.add_forward(builder.memory_kernel(kernels.normalize_forward_kernel, (
            source, output, gamma, beta, statistics, *shape, self.epsilon, self.mode, *layout,
            self.gamma is not None, self.beta is not None), f"{self.name} forward"))

        def backward(output_grad):
            wanted = [short is not None and builder.wants_grad(f"{self.name}/{short}")
                      for short in (self.gamma, self.beta)]
            if not need_input_grad and not any(wanted):
                return None
            grad = keras_order_view(builder, output_grad, x.dims, self.data_format,
                                    self.flattened, flat, f"{self.name} gradient to Keras order",
                                    backward=True)
            if any(wanted):
                gamma_grad, beta_grad = (
                    builder.param_grad(f"{self.name}/{short}", weight_desc) if want else unused
                    for short, want in zip((self.gamma, self.beta), wanted, strict=True))
                builder.add_backward(builder.memory_kernel(
                    kernels.normalize_weight_grad_kernel, (
                        source, grad, statistics, gamma_grad, beta_grad, *shape, self.mode,
                        *layout, *wanted), f"{self.name} weight gradients"))
            if not need_input_grad:
                return None
            input_grad, input_grad_tensor = tensor_view(builder, MemoryDesc.with_tag(flat),
                                                        x.dims, self.data_format,
                                                        self.flattened)
            builder.add_backward(builder.memory_kernel(kernels.normalize_input_grad_kernel, (
                source, grad, input_grad, gamma, statistics, *shape, self.mode, *layout,
                self.gamma is not None), f"{self.name} input gradient"))
            return in_type(builder, input_grad_tensor, *convert,
                           f"{self.name} input gradient to activation type", backward=True)

        return x.with_memory(in_type(builder, output_tensor, *convert,
                                     f"{self.name} output to activation type")), backward
