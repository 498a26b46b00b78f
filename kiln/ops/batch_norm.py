"""BatchNormalization (Keras 3 semantics) as oneDNN's batch normalization primitive.

The primitive normalizes over every logical dim but 1 (the channels) in any layout, blocked
ones included, so it runs in the layout its input already has: no reorder on either pass, and
the output comes in that same layout for the next op. The one exception is a layout oneDNN
serves only with its reference kernel (nChw16c on a CPU without AVX-512): that one is reordered
to nhwc, far cheaper than the reference kernel (docs/performance.md, 'Decisions and their
measurements').

Training plans use forward_training: the batch mean and (biased, as Keras' `ops.moments`)
variance go to plan buffers that backward reads again, and Keras 3's update

    moving = moving * momentum + batch_statistic * (1 - momentum)

runs inside the step as a oneDNN `sum` with scales (momentum, 1 - momentum) writing in place
into the stored moving statistic. A primitive gets the parameter's Memory, which follows the
arena when the store packs it after planning (a numpy view taken while planning would not).
Inference plans, and frozen layers (Keras 3 runs a `trainable=False` BatchNormalization in
inference mode) in training plans, normalize with the moving statistics (`use_global_stats`).

Statistics, gamma and beta are f32 in oneDNN whatever the activations' type, so bf16 plans
keep bf16 activations and f32 parameters, as Keras' mixed precision does.
"""


from ..binding import constants as dnnl
from ..binding.descriptor import descriptor, sum_descriptor
from ..binding.errors import DnnlError
from ..binding.memory import MemoryDesc
from .base import Op
from .tensor import Tensor


class BatchNormOp(Op):
    """Args: name, epsilon, momentum, center (beta), scale (gamma), fuse_relu (relu(BN(x)),
    oneDNN's `fuse_norm_relu`). Set `frozen = True` for a layer with trainable=False."""

    per_image = False  # batch statistics mix the images: never run in sub-batches
    frozen = False

    def __init__(self, name, epsilon=1e-3, momentum=0.99, center=True, scale=True,
                 fuse_relu=False):
        if not epsilon >= 0:  # Keras takes 0 too (a constant channel then gives nan)
            raise ValueError(f"BatchNormalization '{name}': argument epsilon must be a "
                             f"non-negative float, got {epsilon!r}")
        if not 0.0 <= momentum <= 1.0:
            raise ValueError(f"BatchNormalization '{name}': argument momentum must be in "
                             f"[0, 1], got {momentum!r}")
        self.name = name
        self.epsilon = float(epsilon)
        self.momentum = float(momentum)
        self.center = bool(center)
        self.scale = bool(scale)
        self.fuse_relu = bool(fuse_relu)

    def replace(self, **changes):
        """A new op of this class with `changes` to the arguments (the fused relu); the state
        the front end sets after construction (`frozen`, a SyncBatchNormOp's `sync`) carries
        over. This one is left as it is."""
        arguments = {"name": self.name, "epsilon": self.epsilon, "momentum": self.momentum,
                     "center": self.center, "scale": self.scale, "fuse_relu": self.fuse_relu}
        new = type(self)(**{**arguments, **changes})
        for attribute in ("frozen", "sync"):
            if attribute in self.__dict__:
                setattr(new, attribute, self.__dict__[attribute])
        return new

    # -- shape rule -----------------------------------------------------------------------------
    def output_dims(self, input_dims):
        if len(input_dims) not in (2, 4):
            raise ValueError(f"BatchNormalization '{self.name}': expected an input of rank 2 "
                             f"(batch, features) or 4 (batch, height, width, channels), got "
                             f"logical dims {tuple(input_dims)}")
        return tuple(input_dims)

    def parameter_dims(self, input_dims):
        channels = ((input_dims[1],), dnnl.a)
        dims = {}
        if self.scale:
            dims["gamma"] = channels
        if self.center:
            dims["beta"] = channels
        return dims

    def state_dims(self, input_dims):
        channels = ((input_dims[1],), dnnl.a)
        return {"moving_mean": channels, "moving_variance": channels}

    def _flags(self, global_stats):
        flags = 0
        if self.scale:
            flags |= dnnl.use_scale
        if self.center:
            flags |= dnnl.use_shift
        if self.fuse_relu:
            flags |= dnnl.fuse_norm_relu
        if global_stats:
            flags |= dnnl.use_global_stats
        return flags

    # -- forward and backward -------------------------------------------------------------------
    def forward(self, builder, x, need_input_grad=True):
        """Plan `y = [relu](gamma * (x - mean) / sqrt(var + epsilon) + beta)`; returns
        (y, backward)."""
        if x.flattened:
            raise ValueError(
                f"BatchNormalization '{self.name}': input of Keras shape {x.keras_shape} is a "
                f"flattened 4D tensor; expected an unflattened input (normalize before Flatten "
                f"or after a Dense layer)")
        self.output_dims(x.dims)
        desc = x.memory.desc
        if desc.data_type not in (dnnl.f32, dnnl.bf16):
            raise ValueError(f"BatchNormalization '{self.name}': input data type must be f32 "
                             f"or bf16, got {desc!r}")
        name, channels = self.name, x.dims[1]
        # Keras normalizes with the moving statistics outside training and when frozen.
        global_stats = not builder.training or self.frozen
        update_moving = builder.training and not self.frozen
        flags = self._flags(global_stats)
        stat_desc = MemoryDesc.with_tag((channels,), dnnl.f32)
        fwd = self._forward_primitive(builder, desc, flags)
        if fwd.pd.implementation.startswith("ref:"):
            # oneDNN serves some layouts (nChw16c without AVX-512, nChw4c) only with its
            # reference kernel; a reorder to nhwc and the optimized kernel cost a small
            # fraction of it (docs/performance.md, 'Decisions and their measurements').
            plain = MemoryDesc.with_tag(x.dims, desc.data_type,
                                        dnnl.acdb if len(x.dims) == 4 else dnnl.ab)
            candidate = self._forward_primitive(builder, plain, flags)
            if not candidate.pd.implementation.startswith("ref:"):
                desc, fwd = plain, candidate
        source = builder.reorder(x.memory, desc, f"{name} input to layout")
        shapes = f"BatchNormalization '{name}' input {desc!r}"

        args = {dnnl.ARG_SRC: source, dnnl.ARG_DST: builder.allocate(desc)}
        if self.scale:
            args[dnnl.ARG_SCALE] = builder.param(f"{name}/gamma", stat_desc)
        if self.center:
            args[dnnl.ARG_SHIFT] = builder.param(f"{name}/beta", stat_desc)
        if global_stats:
            statistics = (builder.param(f"{name}/moving_mean", stat_desc),
                          builder.param(f"{name}/moving_variance", stat_desc))
        else:
            statistics = (builder.allocate(stat_desc), builder.allocate(stat_desc))
        args[dnnl.ARG_MEAN], args[dnnl.ARG_VARIANCE] = statistics
        workspace_desc = fwd.pd.md(dnnl.query_workspace_md)
        if workspace_desc is not None:
            args[dnnl.ARG_WORKSPACE] = builder.allocate(workspace_desc)
        builder.add_forward(builder.bind(fwd, args, f"{name} forward"))
        if update_moving:
            self._update_moving(builder, stat_desc, statistics)
        output = args[dnnl.ARG_DST]

        def backward(output_grad):
            wanted = {dnnl.ARG_DIFF_SCALE: self.scale and builder.wants_grad(f"{name}/gamma"),
                      dnnl.ARG_DIFF_SHIFT: self.center and builder.wants_grad(f"{name}/beta")}
            if not need_input_grad and not any(wanted.values()):
                return None
            # backward_data when no weight learns; oneDNN 3.2 still writes both weight
            # gradients then (below), so it saves little on CPU.
            bwd_prop = dnnl.backward if any(wanted.values()) else dnnl.backward_data
            bwd = builder.primitive(*descriptor(
                "dnnl_batch_normalization_backward_primitive_desc_create",
                "batch normalization backward", shapes, bwd_prop, desc, desc, desc,
                self.epsilon, flags, fwd.pd))
            grad = builder.reorder(output_grad, bwd.pd.md(dnnl.query_diff_dst_md),
                                   f"{name} gradient to layout", backward=True)
            # oneDNN's batch normalization backward may write diff_src over diff_dst.
            in_place = grad is not output_grad or builder.writable(output_grad)
            input_grad = grad if in_place else builder.allocate(desc)
            bwd_args = {dnnl.ARG_SRC: source, dnnl.ARG_DIFF_DST: grad,
                        dnnl.ARG_MEAN: statistics[0], dnnl.ARG_VARIANCE: statistics[1],
                        dnnl.ARG_DIFF_SRC: input_grad}
            for arg in (dnnl.ARG_SCALE, dnnl.ARG_WORKSPACE):
                if arg in args:
                    bwd_args[arg] = args[arg]
            for arg, short, used in ((dnnl.ARG_DIFF_SCALE, "gamma", self.scale),
                                     (dnnl.ARG_DIFF_SHIFT, "beta", self.center)):
                if wanted[arg]:
                    bwd_args[arg] = builder.param_grad(f"{name}/{short}", stat_desc)
                elif used:
                    # oneDNN 3.2 wants both outputs whenever use_scale / use_shift is set,
                    # even for backward_data; its own buffer each, as the kernel may reread it
                    bwd_args[arg] = builder.allocate(stat_desc)
            builder.add_backward(builder.bind(bwd, bwd_args, f"{name} backward"))
            return input_grad if need_input_grad else None

        return Tensor(output, x.data_format), backward

    def _forward_primitive(self, builder, desc, flags):
        prop = builder.prop_kind  # forward_training keeps the relu workspace for backward
        shapes = f"BatchNormalization '{self.name}' input {desc!r}"
        try:
            return builder.primitive(*descriptor(
                "dnnl_batch_normalization_forward_primitive_desc_create",
                "batch normalization forward", shapes, prop, desc, desc, self.epsilon, flags))
        except DnnlError as error:
            if desc.data_type != dnnl.bf16:
                raise
            # oneDNN implements bf16 batch normalization only for avx512_core and newer.
            raise RuntimeError(
                f"BatchNormalization '{self.name}': oneDNN has no bf16 batch normalization on "
                f"this CPU (status '{error.status}' for input {desc!r}); expected f32 "
                f"activations: use the 'float32' policy") from error

    def _update_moving(self, builder, stat_desc, batch_statistics):
        """moving = moving * momentum + batch * (1 - momentum), in place, after the forward.

        One `sum` call per statistic: a numba kernel would need the arena's numpy views, which
        packing replaces after planning, and one call for both statistics costs about as much
        to dispatch (docs/performance.md, 'Decisions and their measurements')."""
        momentum = self.momentum
        sum_primitive = builder.primitive(*sum_descriptor(
            stat_desc, [stat_desc, stat_desc], [momentum, 1.0 - momentum]))
        for short, batch in zip(("moving_mean", "moving_variance"), batch_statistics,
                                strict=True):
            moving = builder.param(f"{self.name}/{short}", stat_desc)
            builder.add_forward(builder.bind(sum_primitive, {
                dnnl.ARG_MULTIPLE_SRC: moving, dnnl.ARG_MULTIPLE_SRC + 1: batch,
                dnnl.ARG_DST: moving}, f"{self.name} {short} update"))
