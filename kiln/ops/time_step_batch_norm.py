"""A BatchNormalization wrapped in TimeDistributed, trained as Keras does: every time step
normalized with its own batch statistics, the moving statistics updated once per step.

Keras calls the wrapped layer on each slice (batch, ...) in turn, so in training the statistics
of slice t are over the batch (and the image's positions) of that slice only, and the moving
mean and variance take T updates in a row, slice 0 first. That is one oneDNN batch
normalization whose channels are the (time, channel) pairs, T*C of them, on a view of the input:

    (N, T, F)            plain bytes seen as (N, T*F)
    (N, T, C, H, W)      plain bytes seen as (N, T*C, H, W)            (channels_first)
    (N, T, H, W, C)      reordered to (N, T, C, H, W) order, seen so   (channels_last)

gamma and beta are tiled T times into the primitive's scale and shift, the primitive's T*C
gradients summed over T into theirs, and the T*C batch statistics fold into the moving ones in
one kernel. Outside training, and for a frozen layer, every slice uses the moving statistics:
the wrapped op runs on the (N*T, ...) view as any TimeDistributed layer.
"""

import numpy as np

from ..binding import constants as dnnl
from ..binding.descriptor import descriptor
from ..binding.memory import MemoryDesc
from .base import Op
from .numba_config import SERIAL, njit
from .tensor import CHANNELS_LAST, Tensor


@njit(**SERIAL)
def tile_kernel(values, tiled):
    """tiled (T*C) = values (C) repeated T times."""
    channels = values.shape[0]
    for index in range(tiled.shape[0]):
        tiled[index] = values[index % channels]


@njit(**SERIAL)
def sum_over_steps_kernel(per_step, total):
    """total (C) = the T*C per-step values summed over the steps."""
    channels = total.shape[0]
    for c in range(channels):
        total[c] = 0.0
    for index in range(per_step.shape[0]):
        total[index % channels] += per_step[index]


@njit(**SERIAL)
def moving_update_kernel(moving_mean, moving_variance, means, variances, momentum):
    """Keras's moving = moving * momentum + batch * (1 - momentum), once per time step in
    order (the T*C batch statistics are step-major)."""
    channels = moving_mean.shape[0]
    for c in range(channels):
        mean, variance = np.float64(moving_mean[c]), np.float64(moving_variance[c])
        for t in range(means.shape[0] // channels):
            mean = mean * momentum + means[t * channels + c] * (1.0 - momentum)
            variance = variance * momentum + variances[t * channels + c] * (1.0 - momentum)
        moving_mean[c], moving_variance[c] = mean, variance


class TimeStepBatchNormOp(Op):
    """Args: bn (the wrapped layer's BatchNormOp: its name and weights are this op's), fold and
    unfold (the TimeDistributed views, for the moving-statistics path), in_format (the input
    tensor's data format), slice_format (the data format the slices are read in)."""

    def __init__(self, bn, fold, unfold, slice_format=CHANNELS_LAST):
        self.bn, self.fold, self.unfold = bn, fold, unfold
        self.name = bn.name
        self.slice_format = slice_format

    def output_dims(self, input_dims):
        if len(input_dims) not in (3, 5):
            raise ValueError(f"TimeDistributed '{self.fold.name}': a wrapped "
                             f"BatchNormalization trains on (batch, time, features) or video "
                             f"inputs, got dims {tuple(input_dims)}")
        return tuple(input_dims)

    def parameter_dims(self, input_dims):
        return self.bn.parameter_dims(self.fold.output_dims(input_dims))

    def state_dims(self, input_dims):
        return self.bn.state_dims(self.fold.output_dims(input_dims))

    # -- the (time, channel) view -------------------------------------------------------------
    def _channel_view(self, builder, memory, dims, label, backward=False):
        """(step-major view desc over the bytes, those bytes' 5D / 3D desc, the bytes)."""
        data_type = memory.desc.data_type
        if len(dims) == 3:
            n, steps, features = dims
            plain = builder.keep(builder.reorder(memory, MemoryDesc.with_tag(dims, data_type),
                                                 label, backward=backward))
            return MemoryDesc.with_tag((n, steps * features), data_type), plain.desc, plain
        if self.slice_format == CHANNELS_LAST:
            n, steps, h, w, c = dims
            # (N, T, H, W, C) with the bytes in (N, T, C, H, W) order
            strides = (steps * c * h * w, c * h * w, w, 1, h * w)
        else:
            n, steps, c, h, w = dims
            strides = (steps * c * h * w, c * h * w, h * w, w, 1)
        desc = MemoryDesc.with_strides(dims, strides, data_type)
        ordered = builder.keep(builder.reorder(memory, desc, label, backward=backward))
        return (MemoryDesc.with_tag((n, steps * c, h, w), data_type, dnnl.abcd), desc,
                ordered)

    def forward(self, builder, x, need_input_grad=True):
        self.output_dims(x.dims)
        if not builder.training or self.bn.frozen:
            return self._with_moving_statistics(builder, x, need_input_grad)
        bn, name = self.bn, self.name
        view_desc, bytes_desc, ordered = self._channel_view(builder, x.memory, x.dims,
                                                            f"{name} to (time, channel) order")
        source = ordered.view(view_desc)
        channels_total = view_desc.dims[1]
        stat = MemoryDesc.with_tag((channels_total,), dnnl.f32)
        param_desc = MemoryDesc.with_tag((channels_total // x.dims[1],), dnnl.f32)
        flags = bn._flags(global_stats=False)
        fwd = bn._forward_primitive(builder, view_desc, flags)
        output = builder.keep(builder.allocate(view_desc))
        args = {dnnl.ARG_SRC: source, dnnl.ARG_DST: output}
        for arg, short, used in ((dnnl.ARG_SCALE, "gamma", bn.scale),
                                 (dnnl.ARG_SHIFT, "beta", bn.center)):
            if used:
                tiled = builder.allocate(stat)
                builder.add_forward(builder.memory_kernel(
                    tile_kernel, (builder.param(f"{name}/{short}", param_desc), tiled),
                    f"{name} {short} per time step"))
                args[arg] = tiled
        statistics = (builder.allocate(stat), builder.allocate(stat))
        args[dnnl.ARG_MEAN], args[dnnl.ARG_VARIANCE] = statistics
        builder.add_forward(builder.bind(fwd, args, f"{name} forward"))
        builder.add_forward(builder.memory_kernel(
            moving_update_kernel, (builder.param(f"{name}/moving_mean", param_desc),
                                   builder.param(f"{name}/moving_variance", param_desc),
                                   *statistics, np.float64(bn.momentum)),
            f"{name} moving statistics update, once per time step"))
        result = output.view(bytes_desc)

        def backward(output_grad):
            wanted = {dnnl.ARG_DIFF_SCALE: bn.scale and builder.wants_grad(f"{name}/gamma"),
                      dnnl.ARG_DIFF_SHIFT: bn.center and builder.wants_grad(f"{name}/beta")}
            if not need_input_grad and not any(wanted.values()):
                return None
            bwd = builder.primitive(*descriptor(
                "dnnl_batch_normalization_backward_primitive_desc_create",
                "batch normalization backward", f"BatchNormalization '{name}' {view_desc!r}",
                dnnl.backward, view_desc, view_desc, view_desc, bn.epsilon, flags, fwd.pd))
            grad = builder.keep(builder.reorder(output_grad, bytes_desc,
                                                f"{name} gradient to (time, channel) order",
                                                backward=True))
            input_grad = builder.keep(builder.allocate(view_desc))
            bwd_args = {dnnl.ARG_SRC: source, dnnl.ARG_DIFF_DST: grad.view(view_desc),
                        dnnl.ARG_MEAN: statistics[0], dnnl.ARG_VARIANCE: statistics[1],
                        dnnl.ARG_DIFF_SRC: input_grad}
            if dnnl.ARG_SCALE in args:
                bwd_args[dnnl.ARG_SCALE] = args[dnnl.ARG_SCALE]
            sums = []
            for arg, short, used in ((dnnl.ARG_DIFF_SCALE, "gamma", bn.scale),
                                     (dnnl.ARG_DIFF_SHIFT, "beta", bn.center)):
                if used:
                    bwd_args[arg] = builder.allocate(stat)
                if wanted[arg]:
                    sums.append((bwd_args[arg], short))
            builder.add_backward(builder.bind(bwd, bwd_args, f"{name} backward"))
            for per_step, short in sums:
                builder.add_backward(builder.memory_kernel(
                    sum_over_steps_kernel,
                    (per_step, builder.param_grad(f"{name}/{short}", param_desc)),
                    f"{name} {short} gradient summed over time steps"))
            return input_grad.view(bytes_desc) if need_input_grad else None

        return Tensor(result, x.data_format), backward

    def _with_moving_statistics(self, builder, x, need_input_grad):
        folded, fold_backward = self.fold.forward(builder, x, need_input_grad)
        normalized, bn_backward = self.bn.forward(builder, folded, need_input_grad)
        output, unfold_backward = self.unfold.forward(builder, normalized)

        def backward(output_grad):
            grad = bn_backward(unfold_backward(output_grad))
            return None if grad is None else fold_backward(grad)

        return output, backward
