"""LayerNormalization (Keras 3 semantics) on oneDNN's layer normalization primitive.

The primitive normalizes over the last logical dim. Keras normalizes over the axes it is
given; when those are the last ones (axis=-1 on a sequence (batch, steps, features), the
transformer case, or a list of trailing axes), the input's plain Keras-order bytes are a
(rows, features) matrix with the normalized axes flattened into the features: the op reads
that view (a reorder first only when the input has another layout) and writes its output and
input gradient the same way, without copies.

Training plans run forward_training, keeping each row's mean and variance in plan buffers for
backward, which gives the input gradient and the gamma (scale) / beta (shift) gradients in
one call. bf16 activations with f32 scale and shift are asked of oneDNN first; where oneDNN
has no bf16 implementation (oneDNN 3.2 below AVX-512), the rows are converted to f32 and the
output back to bf16, as Keras computes a layer normalization in f32 whatever the policy.

Every other case (axes in the middle, `rms_scaling`) is an AxisNormalizationOp: `layer_norm_op`
picks the path.
"""

from ..binding import constants as dnnl
from ..binding.descriptor import descriptor
from ..binding.errors import DnnlError
from ..binding.memory import MemoryDesc
from . import axis_normalization_kernels as kernels
from .axis_normalization import (
    AxisNormalizationOp,
    in_type,
    keras_order_view,
    layer_view,
    tensor_view,
    weight_dims,
)
from .base import Op
from .tensor import CHANNELS_LAST, keras_shape


def layer_norm_op(name, axes, epsilon=1e-3, center=True, scale=True, rms_scaling=False,
                  data_format=CHANNELS_LAST, flattened=False, rank=None,
                  weight_names=("gamma", "beta")):
    """The op of a LayerNormalization over Keras axes `axes` (sorted, positive) of an input
    of rank `rank`: oneDNN when they are the trailing axes and y is centred, else numba.
    `weight_names`: the short names of gamma and beta (keras.ops.layer_normalization reads
    the calling layer's weights, whatever it named them; None: no such weight)."""
    gamma, beta = weight_names
    if rms_scaling:
        # Keras 3: x * rsqrt(var + eps) * gamma, no beta (its deprecated rms_scaling)
        return AxisNormalizationOp(
            name, "LayerNormalization", lambda shape: layer_view(
                shape, axes, f"LayerNormalization '{name}'"),
            kernels.VARIANCE_SCALED, epsilon, (gamma, None), data_format, flattened)
    if axes[-1] == rank - 1:
        return LayerNormOp(name, axes, epsilon, center, scale, data_format, flattened,
                           weight_names)
    return AxisNormalizationOp(
        name, "LayerNormalization", lambda shape: layer_view(
            shape, axes, f"LayerNormalization '{name}'"),
        kernels.CENTERED, epsilon, (gamma if scale else None, beta if center else None),
        data_format, flattened)


class LayerNormOp(Op):
    """Args: name, axes (sorted positive Keras axes ending with the last), epsilon, center
    (beta), scale (gamma), data_format and flattened (how Keras sees the input),
    weight_names (the short names of gamma and beta)."""

    def __init__(self, name, axes, epsilon=1e-3, center=True, scale=True,
                 data_format=CHANNELS_LAST, flattened=False, weight_names=("gamma", "beta")):
        self.name, self.axes, self.epsilon = name, tuple(axes), float(epsilon)
        self.center, self.scale = bool(center), bool(scale)
        self.data_format, self.flattened = data_format, flattened
        self.gamma_name, self.beta_name = weight_names

    # -- shape rule -------------------------------------------------------------------------
    def _matrix(self, input_dims):
        """(rows, features): the Keras-order bytes seen as a matrix."""
        view = layer_view(keras_shape(input_dims, self.data_format, self.flattened),
                          self.axes, f"LayerNormalization '{self.name}'")
        return view.A, view.S

    def output_dims(self, input_dims):
        self._matrix(input_dims)
        return tuple(input_dims)

    def parameter_dims(self, input_dims):
        features = self._matrix(input_dims)[1]
        dims = {}
        if self.scale:
            dims[self.gamma_name] = weight_dims(features)
        if self.center:
            dims[self.beta_name] = weight_dims(features)
        return dims

    def _flags(self):
        return (dnnl.use_scale if self.scale else 0) | (dnnl.use_shift if self.center else 0)

    # -- forward and backward ---------------------------------------------------------------
    def forward(self, builder, x, need_input_grad=True):
        """Plan y = gamma * (x - mean) / sqrt(var + epsilon) + beta per row; returns
        (y, backward)."""
        name, flags = self.name, self._flags()
        matrix = self._matrix(x.dims)
        stat_desc = MemoryDesc.with_tag((matrix[0],), dnnl.f32)
        weight_desc = MemoryDesc.with_tag((matrix[1],), dnnl.f32)
        desc, fwd = self._forward_primitive(builder, x.memory.desc.data_type, matrix, stat_desc)
        data_type = desc.data_type
        convert = (x.memory.desc.data_type, x.dims, self.data_format, self.flattened)
        source = keras_order_view(builder, x.memory, x.dims, self.data_format, self.flattened,
                                  matrix, f"{name} input to Keras order", data_type=data_type)
        output, output_tensor = tensor_view(builder, desc, x.dims, self.data_format,
                                            self.flattened)
        statistics = (builder.allocate(stat_desc), builder.allocate(stat_desc))
        args = {dnnl.ARG_SRC: source, dnnl.ARG_DST: output,
                dnnl.ARG_MEAN: statistics[0], dnnl.ARG_VARIANCE: statistics[1]}
        if self.scale:
            args[dnnl.ARG_SCALE] = builder.param(f"{name}/{self.gamma_name}", weight_desc)
        if self.center:
            args[dnnl.ARG_SHIFT] = builder.param(f"{name}/{self.beta_name}", weight_desc)
        builder.add_forward(builder.bind(fwd, args, f"{name} forward"))

        def backward(output_grad):
            gamma, beta = f"{name}/{self.gamma_name}", f"{name}/{self.beta_name}"
            wanted = {dnnl.ARG_DIFF_SCALE: self.scale and builder.wants_grad(gamma),
                      dnnl.ARG_DIFF_SHIFT: self.center and builder.wants_grad(beta)}
            if not need_input_grad and not any(wanted.values()):
                return None
            # always `backward`: oneDNN 3.2 has no backward_data layer normalization with
            # use_scale / use_shift (a frozen layer's weight gradients go to scratch buffers)
            bwd = builder.primitive(*descriptor(
                "dnnl_layer_normalization_backward_primitive_desc_create",
                "layer normalization backward", f"LayerNormalization '{name}' input {desc!r}",
                dnnl.backward, desc, desc, desc, stat_desc, self.epsilon, flags, fwd.pd))
            grad = keras_order_view(builder, output_grad, x.dims, self.data_format,
                                    self.flattened, matrix, f"{name} gradient to Keras order",
                                    backward=True, data_type=data_type)
            input_grad, input_grad_tensor = tensor_view(builder, desc, x.dims,
                                                        self.data_format, self.flattened)
            bwd_args = {dnnl.ARG_SRC: source, dnnl.ARG_DIFF_DST: grad,
                        dnnl.ARG_MEAN: statistics[0], dnnl.ARG_VARIANCE: statistics[1],
                        dnnl.ARG_DIFF_SRC: input_grad}
            # oneDNN 3.2's backward refuses to run without the shift as well as the scale
            for arg in (dnnl.ARG_SCALE, dnnl.ARG_SHIFT):
                if arg in args:
                    bwd_args[arg] = args[arg]
            for arg, path, used in ((dnnl.ARG_DIFF_SCALE, gamma, self.scale),
                                    (dnnl.ARG_DIFF_SHIFT, beta, self.center)):
                if wanted[arg]:
                    bwd_args[arg] = builder.param_grad(path, weight_desc)
                elif used:
                    # oneDNN may write both weight gradients whenever the flags are set
                    bwd_args[arg] = builder.allocate(weight_desc)
            builder.add_backward(builder.bind(bwd, bwd_args, f"{name} backward"))
            if not need_input_grad:
                return None
            return in_type(builder, input_grad_tensor, *convert,
                           f"{name} input gradient to activation type", backward=True)

        return x.with_memory(in_type(builder, output_tensor, *convert,
                                     f"{name} output to activation type")), backward

    def _forward_primitive(self, builder, data_type, matrix, stat_desc):
        """(layout of the rows, forward primitive) in the activations' type; in f32 when
        oneDNN has no bf16 layer normalization on this CPU (3.2 has one only from AVX-512
        on): the input is then converted to f32 and the output back, which is what Keras
        computes anyway (layer normalization in at least f32)."""
        types = (data_type,) if data_type == dnnl.f32 else (data_type, dnnl.f32)
        for index, kind in enumerate(types):
            desc = MemoryDesc.with_tag(matrix, kind)
            try:
                return desc, builder.primitive(*descriptor(
                    "dnnl_layer_normalization_forward_primitive_desc_create",
                    "layer normalization forward", f"LayerNormalization '{self.name}' input "
                    f"{desc!r}", builder.prop_kind, desc, desc, stat_desc, self.epsilon,
                    self._flags()))
            except DnnlError as error:
                if index == len(types) - 1 or error.status != "unimplemented":
                    raise
