"""Synchronized BatchNormalization: batch statistics over the global batch of a data-parallel
step, every rank normalizing its shard with the same mean and variance.

Without a `sync` (one process, inference, a frozen layer) it is BatchNormOp. With one (an object
with `sum_in_place(float64 array)` across the ranks, given by the front end for a
data-parallel fit), a training step runs, per layer:

forward   1. oneDNN's forward_training on the shard, for its mean m_r and variance v_r only;
          2. one allreduce of (n_r * m_r, n_r * (v_r + m_r^2), n_r) gives the global mean and
             variance (n_r: values per channel on rank r);
          3. oneDNN's forward with use_global_stats normalizes with them (relu fused as usual),
             and the moving statistics take them in: equal on every rank.
backward  oneDNN's backward with those statistics computes, from the shard's dy,
              dx_r = g r (dy - a - xhat b),   a = sum_r(dy) / n_r,  b = sum_r(dy xhat) / n_r
          (g: gamma, r = 1 / sqrt(var + epsilon)), and writes sum_r(dy), sum_r(dy xhat) as the
          beta and gamma gradients. The global step needs A and B, the same sums over every
          rank, weighted as each rank's loss is (shard / global batch = n_r / N), divided by
          n_r (the rank's gradients are in its own loss's units):
              A = sum_k (n_k / N) sum_k(dy) / n_r,  B likewise with dy xhat.
          So one allreduce of the weighted sums, then dx += g r (a - A) + g r (b - B) xhat, a
          per-channel affine of x that a use_global_stats forward computes (shift g r (a - A),
          scale g r (b - B)), added by a oneDNN sum.
"""

import numpy as np

from ..binding import constants as dnnl
from ..binding.descriptor import descriptor
from ..binding.memory import MemoryDesc, layout_key
from .batch_norm import BatchNormOp
from .tensor import Tensor


class SyncBatchNormOp(BatchNormOp):
    """Args: as BatchNormOp. `sync` (set by the front end) sums float64 arrays across ranks."""

    sync = None

    def forward(self, builder, x, need_input_grad=True):
        if self.sync is None or not builder.training or self.frozen:
            return super().forward(builder, x, need_input_grad)
        if x.flattened or x.memory.desc.data_type != dnnl.f32:
            raise ValueError(f"BatchNormalization '{self.name}' (synchronized): expected an "
                             f"unflattened f32 input, got {x.memory.desc!r}")
        return self._synchronized(builder, x, need_input_grad)

    def _bn(self, builder, prop, desc, flags, hint=None):
        shapes = f"BatchNormalization '{self.name}' input {desc!r}"
        if prop == dnnl.backward:
            return builder.primitive(*descriptor(
                "dnnl_batch_normalization_backward_primitive_desc_create",
                "batch normalization backward", shapes, prop, desc, desc, desc, self.epsilon,
                flags, hint.pd))
        return builder.primitive(*descriptor(
            "dnnl_batch_normalization_forward_primitive_desc_create",
            "batch normalization forward", shapes, prop, desc, desc, self.epsilon, flags))

    def _synchronized(self, builder, x, need_input_grad):
        name, sync, epsilon = self.name, self.sync, self.epsilon
        desc, channels = x.memory.desc, x.dims[1]
        count = int(np.prod(x.dims)) // channels  # values per channel on this rank
        stat = MemoryDesc.with_tag((channels,), dnnl.f32)
        relu = dnnl.fuse_norm_relu if self.fuse_relu else 0
        affine = dnnl.use_scale | dnnl.use_shift
        training = dnnl.forward_training
        # gamma / beta, or constant 1 / 0 when the layer has none (the sums need both)
        scale = builder.param(f"{name}/gamma", stat) if self.scale else builder.allocate(stat)
        shift = builder.param(f"{name}/beta", stat) if self.center else builder.allocate(stat)
        own = [builder.allocate(stat) for _ in range(4)]
        local_mean, local_var, mean, var = own
        total = np.zeros(1)  # values per channel over all ranks, from the forward

        local = self._bn(builder, training, desc, 0)
        output = builder.allocate(desc)
        builder.add_forward(builder.bind(local, {
            dnnl.ARG_SRC: x.memory, dnnl.ARG_DST: output, dnnl.ARG_MEAN: local_mean,
            dnnl.ARG_VARIANCE: local_var}, f"{name} shard statistics"))
        sums = np.zeros(2 * channels + 1)

        def combine(local_mean, local_var, mean, var, scale, shift):
            sums[:channels] = local_mean * count
            sums[channels:-1] = (local_var + np.square(local_mean, dtype=np.float64)) * count
            sums[-1] = count
            sync.sum_in_place(sums)
            total[0] = sums[-1]
            mean[:] = sums[:channels] / total[0]
            var[:] = np.maximum(sums[channels:-1] / total[0] - np.square(mean.astype(
                np.float64)), 0.0)
            if not self.scale:
                scale[:] = 1.0
            if not self.center:
                shift[:] = 0.0

        builder.add_forward(builder.memory_kernel(
            combine, (local_mean, local_var, mean, var, scale, shift),
            f"{name} statistics allreduce"))
        normalize = self._bn(builder, training, desc, dnnl.use_global_stats | affine | relu)
        args = {dnnl.ARG_SRC: x.memory, dnnl.ARG_DST: output, dnnl.ARG_SCALE: scale,
                dnnl.ARG_SHIFT: shift, dnnl.ARG_MEAN: mean, dnnl.ARG_VARIANCE: var}
        workspace = normalize.pd.md(dnnl.query_workspace_md)
        if workspace is not None:
            args[dnnl.ARG_WORKSPACE] = builder.allocate(workspace)
        builder.add_forward(builder.bind(normalize, args, f"{name} forward"))
        self._update_moving(builder, stat, (mean, var))

        def backward(output_grad):
            hint = self._bn(builder, training, desc, affine | relu)
            if relu and layout_key(hint.pd.md(dnnl.query_workspace_md)) != layout_key(workspace):
                raise RuntimeError(f"BatchNormalization '{name}' (synchronized): oneDNN's relu "
                                   "workspace differs between the global-statistics forward "
                                   "and the backward")
            bwd = self._bn(builder, dnnl.backward, desc, affine | relu, hint)
            grad = builder.reorder(output_grad, bwd.pd.md(dnnl.query_diff_dst_md),
                                   f"{name} gradient to layout", backward=True)
            input_grad = builder.allocate(desc)
            sums_of = {}
            for arg, short, used in ((dnnl.ARG_DIFF_SCALE, "gamma", self.scale),
                                     (dnnl.ARG_DIFF_SHIFT, "beta", self.center)):
                target = builder.param_grad(f"{name}/{short}", stat) \
                    if used and builder.wants_grad(f"{name}/{short}") else builder.allocate(stat)
                if not hasattr(target, "as_array"):
                    raise NotImplementedError(f"BatchNormalization '{name}' (synchronized): "
                                              f"the {short} gradient is not kept in a plain "
                                              "layout")
                sums_of[arg] = target
            bwd_args = {dnnl.ARG_SRC: x.memory, dnnl.ARG_DIFF_DST: grad, dnnl.ARG_MEAN: mean,
                        dnnl.ARG_VARIANCE: var, dnnl.ARG_DIFF_SRC: input_grad,
                        dnnl.ARG_SCALE: scale, **sums_of}
            if workspace is not None:
                bwd_args[dnnl.ARG_WORKSPACE] = args[dnnl.ARG_WORKSPACE]
            builder.add_backward(builder.bind(bwd, bwd_args, f"{name} backward"))
            if not need_input_grad:
                return None
            correction_scale, correction_shift = builder.allocate(stat), builder.allocate(stat)
            global_sums = np.zeros(2 * channels)

            def correct(gamma_sum, beta_sum, gamma, var, correction_scale, correction_shift):
                weight = count / total[0]  # this rank's share of the global batch
                global_sums[:channels] = beta_sum * weight
                global_sums[channels:] = gamma_sum * weight
                sync.sum_in_place(global_sums)
                factor = gamma / np.sqrt(var.astype(np.float64) + epsilon)
                correction_shift[:] = factor * (beta_sum - global_sums[:channels]) / count
                correction_scale[:] = factor * (gamma_sum - global_sums[channels:]) / count

            builder.add_backward(builder.memory_kernel(
                correct, (sums_of[dnnl.ARG_DIFF_SCALE], sums_of[dnnl.ARG_DIFF_SHIFT], scale, var,
                          correction_scale, correction_shift), f"{name} gradient allreduce"))
            affine_of_x = self._bn(builder, dnnl.forward_inference, desc,
                                   dnnl.use_global_stats | affine)
            correction = builder.allocate(desc)
            builder.add_backward(builder.bind(affine_of_x, {
                dnnl.ARG_SRC: x.memory, dnnl.ARG_DST: correction, dnnl.ARG_MEAN: mean,
                dnnl.ARG_VARIANCE: var, dnnl.ARG_SCALE: correction_scale,
                dnnl.ARG_SHIFT: correction_shift}, f"{name} gradient correction"))
            builder.add_sum(input_grad, [input_grad, correction], f"{name} corrected gradient")
            return input_grad

        return Tensor(output, x.data_format), backward
