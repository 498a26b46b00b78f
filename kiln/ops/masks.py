"""Keras masks as plan tensors: which steps of a sequence are real (1.0) and which are padding
(0.0), computed in the step from the data, and the Masking layer's output.

A Keras mask is a boolean (batch, steps) tensor riding along with a sequence (see
docs/architecture.md, "Masks"). In a plan it is an ordinary (N, T) tensor of 0.0 / 1.0 in the
activation type, produced by one of these ops and read by the ops that take it as an input:

- `StepMaskOp(value)`: mask[n, t] = any(x[n, t, ...] != value) over the features of a step
  (all of them for a 3D input, the id itself for 2D token ids): Embedding(mask_zero=True)'s
  mask of its ids (value 0), and Masking's mask of its input.
- `MaskingOp(value)`: Masking's output, the input with every masked step set to 0 (Keras's
  `where(mask, x, 0)`); its gradient passes only through the steps kept.
- `MaskedStepMeanOp`: a consumer, the mean over the steps a mask keeps (Keras's
  GlobalAveragePooling1D called with a mask), reading the sequence and its mask as inputs.

Both are one numba pass over plain row-major data, in parallel over the (n, t) steps. A mask
has no gradient.
"""

import numpy as np

from ..binding import constants as dnnl
from ..binding.memory import MemoryDesc
from .base import Op
from .numba_config import PARALLEL, njit, prange
from .tensor import Tensor


@njit(**PARALLEL)
def step_mask_kernel(values, out, value, width):
    """out[r] = 1.0 if any of the `width` values of step r differs from `value`, else 0.0."""
    for r in prange(out.size):
        keep = 0.0
        for j in range(width):
            if values[r * width + j] != value:
                keep = 1.0
                break
        out[r] = keep


@njit(**PARALLEL)
def masked_steps_kernel(x, source, out, value, width):
    """out[r, :] = source[r, :] where step r of `x` has a value other than `value`, else 0:
    Masking's forward (source = x) and backward (source = the output gradient)."""
    for r in prange(out.size // width):
        keep = False
        for j in range(width):
            if x[r * width + j] != value:
                keep = True
                break
        for j in range(width):
            out[r * width + j] = source[r * width + j] if keep else 0.0


def _plain_values(builder, x, label):
    """`x` in a plain row-major layout numba can read: int32 token ids as they are, any
    float tensor as f32 (a bf16 activation is converted)."""
    data_type = dnnl.s32 if x.memory.desc.data_type == dnnl.s32 else dnnl.f32
    return builder.reorder(x.memory, MemoryDesc.with_tag(x.dims, data_type), label)


def _in_activation_type(builder, memory, dims, label):
    """An f32 result as the plan's activation type (one reorder under mixed bfloat16)."""
    if builder.data_type == dnnl.f32:
        return memory
    return builder.reorder(memory, MemoryDesc.with_tag(dims, builder.data_type), label)


@njit(**PARALLEL)
def keep_every_step_kernel(out):
    for r in prange(out.size):
        out[r] = 1.0


class StepMaskOp(Op):
    """Args: name, value (the padding value: a step whose values all equal it is masked;
    None keeps every step, Concatenate's mask for an input without one).
    Input (N, T) token ids or (N, T, features); output the (N, T) mask."""

    reads_integers = True  # Embedding's ids, compared before any cast (as Keras does)

    def __init__(self, name, value=0.0):
        self.name = name
        self.value = None if value is None else float(value)

    def output_dims(self, input_dims):
        if len(input_dims) not in (2, 3):
            raise ValueError(f"mask '{self.name}': expected (batch, steps) ids or a (batch, "
                             f"steps, features) sequence, got dims {tuple(input_dims)}")
        return tuple(input_dims[:2])

    def forward(self, builder, x, need_input_grad=True):
        values = _plain_values(builder, x, f"{self.name} input to plain")
        dims = self.output_dims(x.dims)
        width = int(np.prod(x.dims[2:], dtype=np.int64))
        mask = builder.allocate(MemoryDesc.with_tag(dims, dnnl.f32))
        if self.value is None:
            builder.add_forward(builder.memory_kernel(keep_every_step_kernel, (mask,),
                                                      f"{self.name} mask of ones"))
        else:
            value = (np.int32(self.value) if values.desc.data_type == dnnl.s32
                     else np.float32(self.value))
            builder.add_forward(builder.memory_kernel(
                step_mask_kernel, (values, mask, value, width), f"{self.name} mask"))
        output = _in_activation_type(builder, mask, dims, f"{self.name} mask to activations")
        return Tensor(output, x.data_format, backward_reads_memory=False), lambda grad: None


class MaskingOp(Op):
    """Args: name, mask_value. Input and output (N, T, features)."""

    def __init__(self, name, mask_value=0.0):
        self.name = name
        self.mask_value = float(mask_value)

    def output_dims(self, input_dims):
        if len(input_dims) != 3:
            raise ValueError(f"Masking '{self.name}': expected a 3D input (batch, steps, "
                             f"features), got dims {tuple(input_dims)}")
        return tuple(input_dims)

    def forward(self, builder, x, need_input_grad=True):
        dims = self.output_dims(x.dims)
        plain = MemoryDesc.with_tag(dims, dnnl.f32)
        values = builder.reorder(x.memory, plain, f"{self.name} input to plain")
        width, value = dims[2], np.float32(self.mask_value)
        kept = builder.allocate(plain)
        builder.add_forward(builder.memory_kernel(
            masked_steps_kernel, (values, values, kept, value, width), f"{self.name} forward"))
        output = _in_activation_type(builder, kept, dims, f"{self.name} output to activations")

        def backward(output_grad):
            if not need_input_grad:
                return None
            grad = builder.reorder(output_grad, plain, f"{self.name} gradient to plain",
                                   backward=True)
            input_grad = builder.allocate(plain)
            builder.add_backward(builder.memory_kernel(
                masked_steps_kernel, (values, grad, input_grad, value, width),
                f"{self.name} backward"))
            return input_grad

        return Tensor(output, x.data_format, backward_reads_memory=False), backward


@njit(**PARALLEL)
def masked_mean_kernel(x, mask, out, steps, channels, step_stride, channel_stride):
    """out[n, c] = sum_t x[n, t, c] * mask[n, t] / sum_t mask[n, t] (NaN when every step is
    masked, as Keras's 0 / 0); x indexed with its strides (channels_last or _first)."""
    for n in prange(out.size // channels):
        count = 0.0
        for t in range(steps):
            count += mask[n * steps + t]
        base = n * steps * channels
        for c in range(channels):
            total = 0.0
            for t in range(steps):
                total += x[base + t * step_stride + c * channel_stride] * mask[n * steps + t]
            out[n * channels + c] = total / count


@njit(**PARALLEL)
def masked_mean_backward_kernel(grad, mask, out, steps, channels, step_stride,
                                channel_stride):
    """out[n, t, c] = grad[n, c] * mask[n, t] / sum_t mask[n, t]."""
    for n in prange(grad.size // channels):
        count = 0.0
        for t in range(steps):
            count += mask[n * steps + t]
        base = n * steps * channels
        for t in range(steps):
            share = mask[n * steps + t] / count
            for c in range(channels):
                out[base + t * step_stride + c * channel_stride] = grad[n * channels + c] * share


class MaskedStepMeanOp(Op):
    """The mean over the steps a mask keeps: Keras's GlobalAveragePooling1D given a mask.
    Inputs [sequence (N, T, C) (or (N, C, T) channels_first), mask (N, T)]; output (N, C).
    Args: name, data_format (of the sequence)."""

    arity = None

    def __init__(self, name, data_format="channels_last"):
        self.name = name
        self.data_format = data_format

    def _steps_channels(self, dims):
        n, a, b = dims
        return (a, b) if self.data_format == "channels_last" else (b, a)

    def output_dims(self, input_dims):
        sequence, mask = input_dims
        steps, channels = self._steps_channels(sequence)
        if len(sequence) != 3 or tuple(mask[1:]) != (steps,):
            raise ValueError(f"masked mean '{self.name}': expected a (batch, steps, channels) "
                             f"sequence and its (batch, steps) mask, got dims "
                             f"{tuple(sequence)} and {tuple(mask)}")
        return (sequence[0], channels)

    def forward(self, builder, x, need_input_grad=None):
        sequence, mask = x
        dims = tuple(sequence.dims)
        steps, channels = self._steps_channels(dims)
        strides = (channels, 1) if self.data_format == "channels_last" else (1, steps)
        plain = MemoryDesc.with_tag(dims, dnnl.f32)
        values = builder.reorder(sequence.memory, plain, f"{self.name} input to plain")
        weights = builder.reorder(mask.memory, MemoryDesc.with_tag(mask.dims, dnnl.f32),
                                  f"{self.name} mask to plain")
        out_dims = (dims[0], channels)
        mean = builder.allocate(MemoryDesc.with_tag(out_dims, dnnl.f32))
        builder.add_forward(builder.memory_kernel(
            masked_mean_kernel, (values, weights, mean, steps, channels, *strides),
            f"{self.name} masked mean"))
        output = _in_activation_type(builder, mean, out_dims, f"{self.name} to activations")

        def backward(output_grad):
            if not (need_input_grad or [True])[0]:
                return [None, None]
            grad = builder.reorder(output_grad, MemoryDesc.with_tag(out_dims, dnnl.f32),
                                   f"{self.name} gradient to plain", backward=True)
            input_grad = builder.allocate(plain)
            builder.add_backward(builder.memory_kernel(
                masked_mean_backward_kernel,
                (grad, weights, input_grad, steps, channels, *strides),
                f"{self.name} masked mean backward"))
            return [input_grad, None]  # a mask has no gradient

        return Tensor(output, sequence.data_format, backward_reads_memory=False), backward
