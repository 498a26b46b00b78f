"""2D convolution: shape rule, forward (bias + activation fused as post-ops) and backward.

oneDNN primitives: convolution forward (src/weights/dst `format_tag any`), backward-data (skipped
for the first layer), backward-weights with DIFF_BIAS (the bias gradient comes from the same
pass over the output gradient, never from a separate reduction).

Dilation and groups are the same primitives: oneDNN takes dilations as `rate - 1` and groups as
5D weights (g, out/g, in/g, kh, kw). A depthwise convolution is groups = channels: oneDNN runs
it with its own depthwise kernels (jit_dw / brdgmm_dw), so it needs no op of its own.
"""

from ..binding import constants as dnnl
from ..binding.errors import DnnlError
from ..binding.library import lib
from ..binding.memory import MemoryDesc, layout_key, to_dims
from ..binding.primitive import Attributes, PrimitiveDesc, default_attributes, post_op_arg
from .base import Op
from .eltwise import eltwise_backward, post_ops
from .merge import add_binary
from .tensor import Tensor

# Convolutions keep no workspace, so inference plans may use the training kind too. Which kind
# is faster depends on the CPU: on an AVX-512 Xeon oneDNN 3.2 picks a slower kernel for some
# small forward_inference convs (cifar10_cnn's 64->64 on 15x15: 1.8 ms as inference, 1.2 ms
# as training); on an AVX2 EPYC forward_inference picks brgconv kernels (ResNet-20 inference
# 97.9 against 106.8 ms per batch of 128, cifar10_cnn and mnist_cnn equal within 2%).
FORWARD = dnnl.forward_training
_avx512 = []


def forward_kind(builder):
    """The prop kind of a convolution's forward in this plan (see above)."""
    if builder.training:
        return FORWARD
    if not _avx512:
        isa = lib.dnnl_get_effective_cpu_isa()
        _avx512.append(isa & dnnl.cpu_isa_avx512_core == dnnl.cpu_isa_avx512_core)
    return FORWARD if _avx512[0] else dnnl.forward_inference
# Backward-data in the layouts of forward's tensors when oneDNN's own choice differs.
PIN_BACKWARD_DATA_LAYOUT = True


def dilated_kernel(kernel, dilation):
    """The span of a kernel of `kernel` taps `dilation` apart."""
    return (kernel - 1) * dilation + 1


def conv_output_length(length, kernel, stride, padding):
    """Keras/TensorFlow rule: 'valid' = floor((L - k) / s) + 1, 'same' and 'causal' (Conv1D:
    all the padding before) = ceil(L / s) (`kernel` is the dilated span)."""
    if padding == "valid":
        return (length - kernel) // stride + 1
    return -(-length // stride)


def same_padding(length, kernel, stride):
    """(before, after) padding for 'same'; the odd pixel goes after, as in TensorFlow."""
    out = -(-length // stride)
    total = max((out - 1) * stride + kernel - length, 0)
    return total // 2, total - total // 2


class Conv2D(Op):
    """A 2D convolution op.

    Args:
        name: the layer name, used for parameter names and error messages.
        filters, kernel_size, strides: ints / pairs of ints.
        padding: 'valid', 'same' or 'causal' (Conv1D's: all the padding before).
        activation: None, 'linear', 'relu', 'tanh' or 'sigmoid' (fused as a post-op).
        use_bias: whether a bias is added (fused into the primitive).
        dilation_rate: pair of ints (1 = none).
        groups: the input and output channels split into `groups` independent convolutions;
            groups = input channels is a depthwise convolution (output channel c * m + k
            reads input channel c, as Keras's DepthwiseConv2D with depth_multiplier m).
        kernel_name: the short name of the kernel parameter ('depthwise_kernel' and
            'pointwise_kernel' in SeparableConv2D's two ops).
        activation_tag: None lets oneDNN choose the activations' layouts (blocked); a plain
            tag fixes them (Conv1D's zero-copy views of its 3D tensors).

    `channel_affine` (set by the inference-plan fusion of a following batch norm, see
    batch_norm_folding.py) plans per-channel (scale, shift) memories of dims (1, C, 1, 1):
    y = activation(conv(x) * scale + shift), as binary post-ops of the same primitive.
    """

    channel_affine = None
    per_image = True

    def __init__(self, name, filters, kernel_size, strides=(1, 1), padding="valid",
                 activation=None, use_bias=True, dilation_rate=(1, 1), groups=1,
                 kernel_name="kernel", activation_tag=None):
        self.name = name
        self.filters = filters
        self.kernel_size = tuple(kernel_size)
        self.strides = tuple(strides)
        self.padding = padding
        self.activation = activation
        self.use_bias = use_bias
        self.dilation_rate = tuple(dilation_rate)
        self.groups = groups
        self.kernel_name = kernel_name
        self.activation_tag = activation_tag

    @property
    def _span(self):
        return tuple(dilated_kernel(k, d) for k, d in zip(self.kernel_size, self.dilation_rate,
                                                              strict=True))

    # -- shape rule ---------------------------------------------------------------------------
    def output_dims(self, input_dims):
        n, channels, h, w = input_dims
        if channels % self.groups or self.filters % self.groups:
            raise ValueError(
                f"Conv2D '{self.name}': groups={self.groups} must divide the input channels "
                f"({channels}) and filters ({self.filters})")
        (kh, kw), (sh, sw) = self._span, self.strides
        out_h = conv_output_length(h, kh, sh, self.padding)
        out_w = conv_output_length(w, kw, sw, self.padding)
        if out_h <= 0 or out_w <= 0:
            raise ValueError(
                f"Conv2D '{self.name}': input of height x width {h}x{w} is smaller than "
                f"kernel_size {self.kernel_size} with padding '{self.padding}'")
        return (n, self.filters, out_h, out_w)

    def parameter_dims(self, input_dims):
        """Logical dims and the tag of the Keras layout: kernel (kh, kw, in, out) is hwio; a
        grouped kernel (kh, kw, in/g, out), out = g * out/g + k, is (g, out/g, in/g, kh, kw)
        in tag decab."""
        kh, kw = self.kernel_size
        g = self.groups
        if g == 1:
            kernel = ((self.filters, input_dims[1], kh, kw), dnnl.cdba)
        else:
            kernel = ((g, self.filters // g, input_dims[1] // g, kh, kw), dnnl.decab)
        dims = {self.kernel_name: kernel}
        if self.use_bias:
            dims["bias"] = ((self.filters,), dnnl.a)
        return dims

    def _padding(self, h, w):
        if self.padding == "valid":
            return (0, 0), (0, 0)
        if self.padding == "causal":
            return (self._span[0] - 1, self._span[1] - 1), (0, 0)
        (top, bottom), (left, right) = (same_padding(h, self._span[0], self.strides[0]),
                                        same_padding(w, self._span[1], self.strides[1]))
        return (top, left), (bottom, right)

    # -- the weights the primitives read and the gradients they write (Conv2DChannelAffine,
    # conv2d_channel_affine.py, reads scaled weights and writes their gradients aside) --------
    @property
    def primitive_bias(self):
        """Whether the primitives take a bias argument."""
        return self.use_bias

    def kernel_value(self, builder, desc):
        return builder.param(f"{self.name}/{self.kernel_name}", desc)

    def bias_value(self, builder, desc):
        return builder.param(f"{self.name}/bias", desc)

    def wants_weight_grads(self, builder):
        return builder.wants_grad(f"{self.name}/{self.kernel_name}")

    def weight_grad_targets(self, builder, weights_desc, bias_desc):
        """(where backward-weights writes the kernel's gradient, the bias's or None)."""
        kernel = builder.param_grad(f"{self.name}/{self.kernel_name}", weights_desc)
        bias = builder.param_grad(f"{self.name}/bias", bias_desc) if self.use_bias else None
        return kernel, bias

    # -- forward and backward -------------------------------------------------------------------
    def forward(self, builder, x, need_input_grad=True, residual=None):
        """Plan `y = activation(conv(x, kernel) + bias [+ residual])`; returns (y, backward).
        `residual` (a Tensor of the output's dims that nothing reads afterwards; inference
        plans only) is added by a sum post-op before the activation, y overwriting it in place:
        a residual block's add (see conv2d_residual.py)."""
        input_dims = x.dims
        output_dims = self.output_dims(input_dims)
        kernel_param = f"{self.name}/{self.kernel_name}"
        weight_dims = self.parameter_dims(input_dims)[self.kernel_name][0]
        pad_l, pad_r = self._padding(input_dims[2], input_dims[3])
        dt = builder.data_type
        has_bias = self.primitive_bias
        geometry = (tuple(input_dims), output_dims, self.kernel_size, self.strides, pad_l, pad_r,
                    has_bias, self.dilation_rate, self.groups, self.activation_tag)
        shapes = f"Conv2D '{self.name}' input {list(input_dims)} output {list(output_dims)}"
        if self.activation_tag is None:
            src_any, dst_any = MemoryDesc.any(input_dims, dt), MemoryDesc.any(output_dims, dt)
        else:
            src_any = MemoryDesc.with_tag(input_dims, dt, self.activation_tag)
            dst_any = MemoryDesc.with_tag(output_dims, dt, self.activation_tag)
        w_any = MemoryDesc.any(weight_dims, dt)
        w_grad_any = MemoryDesc.any(weight_dims, dnnl.f32)  # f32 even when activations are bf16
        bias_desc = MemoryDesc.with_tag((self.filters,), dnnl.f32) if has_bias else None
        bias_handle = bias_desc.handle if bias_desc is not None else None
        strides = to_dims(self.strides)
        dilates = to_dims(tuple(d - 1 for d in self.dilation_rate))  # oneDNN counts the gaps
        pad_l_dims, pad_r_dims = to_dims(pad_l), to_dims(pad_r)

        affine = None
        if self.channel_affine is not None:
            if builder.training:
                raise ValueError(f"Conv2D '{self.name}': a folded batch norm is for inference "
                                 "plans only")
            affine = self.channel_affine(builder, self.filters)
        binary = () if affine is None else (("binary", dnnl.binary_mul, affine[0].desc),
                                            ("binary", dnnl.binary_add, affine[1].desc))
        kind = forward_kind(builder)

        def forward_primitive(activation, residual_desc=None):
            extra = () if residual_desc is None else (("sum",),)
            dst = dst_any if residual_desc is None else residual_desc  # written in place

            def make_forward():
                attributes = Attributes(binary + extra + tuple(post_ops(activation)))
                return PrimitiveDesc(
                    "dnnl_convolution_forward_primitive_desc_create", "convolution forward",
                    shapes, kind, dnnl.convolution_direct, src_any.handle, w_any.handle,
                    bias_handle, dst.handle, strides, dilates, pad_l_dims, pad_r_dims,
                    attributes.handle)

            return builder.primitive(
                ("conv fwd", kind, dt, geometry, activation, affine is not None,
                 None if residual_desc is None else layout_key(residual_desc)), make_forward)

        residual_memory = None
        if residual is not None:
            if builder.training:
                raise ValueError(f"Conv2D '{self.name}': a fused residual add is for "
                                 "inference plans only")
            # the sum post-op accumulates into dst, so the residual must be in the layout the
            # convolution writes anyway. (A binary add post-op could read it in any layout but
            # costs brgconv on AVX2 1.4 ms a call here, more than the add it saves.)
            preferred = forward_primitive(None).pd.md(dnnl.query_dst_md)
            residual_memory = builder.overwrite(builder.reorder(
                residual.memory, preferred, f"{self.name} residual to layout"))
        fwd = forward_primitive(self.activation,
                                None if residual_memory is None else residual_memory.desc)
        separate_add = False
        if residual_memory is not None and fwd.pd.implementation.startswith("ref"):
            # oneDNN has no optimized kernel with a sum post-op into this layout (4 channels
            # in plain NCHW on AVX2): a fast convolution and a separate add instead
            separate_add = not forward_primitive(None).pd.implementation.startswith("ref")
            if separate_add:
                fwd = forward_primitive(None)

        def backward_weights():
            return builder.primitive(("conv bwd weights", dt, geometry), lambda: PrimitiveDesc(
                "dnnl_convolution_backward_weights_primitive_desc_create",
                "convolution backward weights", shapes, dnnl.convolution_direct, src_any.handle,
                w_grad_any.handle, bias_handle, dst_any.handle, strides, dilates, pad_l_dims,
                pad_r_dims, fwd.pd.handle, default_attributes().handle))

        if builder.training and dt != dnnl.f32:
            # bf16 compute keeps f32 master weights in the layout their gradient comes in.
            builder.master_layout(kernel_param,
                                  backward_weights().pd.md(dnnl.query_diff_weights_md))
        src = builder.reorder(x.memory, fwd.pd.md(dnnl.query_src_md), f"{self.name} input")
        args = {dnnl.ARG_SRC: src,
                dnnl.ARG_WEIGHTS: self.kernel_value(builder, fwd.pd.md(dnnl.query_weights_md)),
                dnnl.ARG_DST: residual_memory if residual_memory is not None and not separate_add
                else builder.allocate(fwd.pd.md(dnnl.query_dst_md))}
        if has_bias:
            args[dnnl.ARG_BIAS] = self.bias_value(builder, bias_desc)
        if affine is not None:
            args[post_op_arg(0)], args[post_op_arg(1)] = affine
        builder.add_forward(builder.bind(fwd, args, f"{self.name} forward"))
        output = args[dnnl.ARG_DST]
        if separate_add:
            add_binary(builder, dnnl.binary_add, residual_memory, output, residual_memory,
                       f"{self.name} residual add", self.activation, who=f"Conv2D '{self.name}'")
            output = residual_memory

        def backward(output_grad):
            grad = output_grad
            if not result.activation_grad_applied_downstream:
                grad = eltwise_backward(builder, self.activation, output, output_grad, self.name)
            if self.wants_weight_grads(builder):  # not for a frozen layer
                bwd_w = backward_weights()
                weights_grad, bias_grad = self.weight_grad_targets(
                    builder, bwd_w.pd.md(dnnl.query_diff_weights_md), bias_desc)
                w_args = {
                    dnnl.ARG_SRC: builder.reorder(src, bwd_w.pd.md(dnnl.query_src_md),
                                                  f"{self.name} input for weights", backward=True),
                    dnnl.ARG_DIFF_DST: builder.reorder(
                        grad, bwd_w.pd.md(dnnl.query_diff_dst_md),
                        f"{self.name} gradient for weights", backward=True),
                    dnnl.ARG_DIFF_WEIGHTS: weights_grad}
                if has_bias:
                    w_args[dnnl.ARG_DIFF_BIAS] = bias_grad
                builder.add_backward(builder.bind(bwd_w, w_args, f"{self.name} backward weights"))
            if not need_input_grad:
                return None
            def make_backward_data(diff_src, diff_dst):
                return lambda: PrimitiveDesc(
                    "dnnl_convolution_backward_data_primitive_desc_create",
                    "convolution backward data", shapes, dnnl.convolution_direct,
                    diff_src.handle, w_any.handle, diff_dst.handle, strides, dilates,
                    pad_l_dims, pad_r_dims, fwd.pd.handle, default_attributes().handle)

            bwd_d = builder.primitive(("conv bwd data", dt, geometry),
                                      make_backward_data(src_any, dst_any))
            if PIN_BACKWARD_DATA_LAYOUT and bwd_d.pd.md(dnnl.query_diff_dst_md) != grad.desc:
                # oneDNN picked other layouts than the gradient has (strided convs on AVX2):
                # gradients in the forward's layouts save two reorders of activation size
                try:
                    pinned = builder.primitive(
                        ("conv bwd data", dt, geometry, layout_key(grad.desc),
                         layout_key(src.desc)), make_backward_data(src.desc, grad.desc))
                    # unless only the reference kernel takes them (a strided depthwise
                    # convolution in the blocked layouts of its forward, on AVX2)
                    if (not pinned.pd.implementation.startswith("ref")
                            or bwd_d.pd.implementation.startswith("ref")):
                        bwd_d = pinned
                except DnnlError:
                    pass
            input_grad = builder.allocate(bwd_d.pd.md(dnnl.query_diff_src_md))
            builder.add_backward(builder.bind(bwd_d, {
                dnnl.ARG_DIFF_DST: builder.reorder(
                    grad, bwd_d.pd.md(dnnl.query_diff_dst_md),
                    f"{self.name} gradient for data", backward=True),
                dnnl.ARG_WEIGHTS: self.kernel_value(builder, bwd_d.pd.md(dnnl.query_weights_md)),
                dnnl.ARG_DIFF_SRC: input_grad}, f"{self.name} backward data"))
            return input_grad

        # conv's backward reads its output only for the activation's derivative
        result = Tensor(output, x.data_format, activation=self.activation,
                        backward_reads_memory=False)
        return result, backward
