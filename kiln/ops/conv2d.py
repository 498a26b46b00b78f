"""2D convolution: shape rule, forward (bias + activation fused as post-ops) and backward.

oneDNN primitives (conv_family.py): convolution forward (src/weights/dst `format_tag any`),
backward-data (skipped for the first layer), backward-weights with DIFF_BIAS.

Dilation and groups are the same primitives: oneDNN takes dilations as `rate - 1` and groups as
5D weights (g, out/g, in/g, kh, kw). A depthwise convolution is groups = channels: oneDNN runs
it with its own depthwise kernels (jit_dw / brdgmm_dw), so it needs no op of its own.
"""

from ..binding import constants as dnnl
from ..binding.library import cpu_has, lib
from ..binding.memory import MemoryDesc
from ..binding.post_ops import NONE, accumulate, binary
from ..binding.primitive import post_op_arg
from .base import Op
from .conv_family import CONVOLUTION, Pass, Primitives
from .depthwise_weights import plan_depthwise_weights, worth_replacing
from .eltwise import post_ops
from .layout_preference import prefer
from .merge import add_binary
from .tensor import Tensor

# Convolutions keep no workspace, so inference plans may use the training kind too. Which kind
# is faster depends on the CPU: on an AVX-512 Xeon oneDNN 3.2 picks a slower kernel for some
# small forward_inference convs, so inference plans there use forward_training; on an AVX2
# EPYC forward_inference picks brgconv kernels, and inference plans use it (forward_kind).
# Measurements: docs/performance.md, 'Decisions and their measurements'.
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
# A convolution whose activations are pinned to a plain layout (Conv1D's (batch, steps,
# channels) views) computes its weight gradient in oneDNN's own layouts, the input and the
# output gradient reordered there, once the input has this many channels: oneDNN 3.2's
# backward-weights runs 1.3-2.7x slower in nwc than in its blocked layouts, reorders included,
# from 50 input channels up (IMDB's Conv1D(250, 3) on 50 channels: 25.6 -> 19.8 ms), but
# faster for one channel (0.66 vs 1.16 ms) (docs/performance.md, 'Decisions and their
# measurements').
OWN_LAYOUT_BACKWARD_WEIGHTS_CHANNELS = 16
# Under bf16 on AMX, oneDNN's AMX convolutions read and write nhwc. A convolution it has no AMX
# kernel for (one input channel: mnist_cnn's first layer) picks a blocked output, which the
# next convolution reorders to nhwc in forward and its gradient twice in backward (to the
# blocked layout for the activation's derivative, back to nhwc for backward-weights). Such a
# convolution writes nhwc instead when oneDNN has a real kernel for it (docs/performance.md,
# 'Decisions and their measurements').
NHWC_OUTPUT_UNDER_AMX = True


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


class Conv2DOp(Op):
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
            tag fixes them (Conv1DOp's zero-copy views of its 3D tensors).
        channel_affine: None, or a folded batch norm (batch_norm_folding.FoldedBatchNorm, from
            the inference-plan fusion of a following batch norm): its per-channel (scale,
            shift) of dims (1, C, 1, 1) make y = activation(conv(x) * scale + shift), as
            binary post-ops of the same primitive.
    """

    per_image = True  # the plan may run it in sub-batches

    def __init__(self, name, filters, kernel_size, strides=(1, 1), padding="valid",
                 activation=None, use_bias=True, dilation_rate=(1, 1), groups=1,
                 kernel_name="kernel", activation_tag=None, channel_affine=None):
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
        self.channel_affine = channel_affine

    @property
    def arguments(self):
        """The constructor's arguments: a fused op is a new op built from them."""
        return {"name": self.name, "filters": self.filters, "kernel_size": self.kernel_size,
                "strides": self.strides, "padding": self.padding,
                "activation": self.activation, "use_bias": self.use_bias,
                "dilation_rate": self.dilation_rate, "groups": self.groups,
                "kernel_name": self.kernel_name, "activation_tag": self.activation_tag,
                "channel_affine": self.channel_affine}

    def replace(self, **changes):
        """A new convolution with `changes` to the arguments (a fused activation, a folded
        batch norm); this one is left as it is."""
        return Conv2DOp(**{**self.arguments, **changes})

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

    # -- the weights the primitives read and the gradients they write (Conv2DChannelAffineOp,
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
    def forward(self, builder, x, need_input_grad=True):
        """Plan `y = activation(conv(x, kernel) + bias)`; returns (y, backward)."""
        return self.plan(builder, x, need_input_grad, self.activation)

    def plan(self, builder, x, need_input_grad, activation, residual=None):
        """Plan `y = activation(affine(conv(x, kernel) + bias) [+ residual])`, the affine
        being a folded batch norm's (channel_affine). `residual` (a Tensor of the output's dims
        that nothing reads afterwards; inference plans only) is added by a sum post-op before
        the activation, y overwriting it in place: a residual block's add (see
        conv2d_residual.py)."""
        if residual is not None and builder.training:
            raise ValueError(f"Conv2D '{self.name}': a fused residual add is for "
                             "inference plans only")
        layer = self._primitives(builder, x.dims)
        affine, affine_args = self._folded_affine(builder)
        kind = forward_kind(builder)
        src_any, dst_any = self._activation_descs(x.dims, builder.data_type)

        def forward(after_affine, dst=dst_any):
            return builder.primitive(*layer.forward(kind, src_any, dst, affine + after_affine))

        residual_memory = None
        residual_post_op = None  # the residual's binary add post-op, when that is the way
        if residual is not None:
            # the sum post-op accumulates into dst, so the residual must be in the layout the
            # convolution writes anyway. (A binary add post-op could read it in any layout but
            # costs brgconv on AVX2 more per call than the add it saves: docs/performance.md,
            # 'Decisions and their measurements'.)
            preferred = forward(NONE).pd.md(dnnl.query_dst_md)
            residual_memory = builder.reorder(residual.memory, preferred,
                                              f"{self.name} residual to layout")
            add_post = binary(dnnl.binary_add, preferred) + post_ops(activation)
            # oneDNN may have no optimized kernel with a sum post-op into this layout (4
            # channels in plain NCHW on AVX2; after a folded batch norm's binary post-ops on
            # AVX-512, where jit_1x1 takes the residual as a binary add post-op instead): a
            # fast convolution and a separate add otherwise
            fwd = prefer(lambda: forward(accumulate() + post_ops(activation), preferred),
                         lambda: prefer(lambda: forward(add_post), lambda: forward(NONE)))
            if fwd.pd.key == forward(add_post).pd.key:
                residual_post_op = {post_op_arg(len(affine_args)): residual_memory}
            else:
                residual_memory = builder.overwrite(residual_memory)
        else:
            fwd = self._nhwc_under_amx(builder, x.dims, forward(post_ops(activation)),
                                       lambda dst: forward(post_ops(activation), dst))
        separate_add = residual is not None and fwd.pd.key == forward(NONE).pd.key

        src_for_weights, dst_for_weights = self._backward_weights_descs(
            x.dims, builder.data_type, src_any, dst_any)

        def backward_weights():
            return builder.primitive(*layer.backward_weights(src_for_weights, dst_for_weights,
                                                             fwd))

        steps = Pass(builder, self.name, lambda desc: self.kernel_value(builder, desc),
                     self._weight_grads(builder, layer.bias))
        steps.master_layout(f"{self.name}/{self.kernel_name}", backward_weights)
        steps.plan_weights = self._depthwise_weights(builder, x.dims, backward_weights)
        src = builder.reorder(x.memory, fwd.pd.md(dnnl.query_src_md), f"{self.name} input")
        if residual_memory is not None and not separate_add and residual_post_op is None:
            output = residual_memory  # written in place by the sum post-op
        else:
            output = builder.allocate(fwd.pd.md(dnnl.query_dst_md))
        bias = self.bias_value(builder, layer.bias) if layer.bias is not None else None
        steps.forward(fwd, src, output, bias, {**affine_args, **(residual_post_op or {})})
        if separate_add:
            add_binary(builder, dnnl.binary_add, residual_memory, output, residual_memory,
                       f"{self.name} residual add", activation, who=f"Conv2D '{self.name}'")
            output = residual_memory

        def backward_data(grad):
            chosen = builder.primitive(*layer.backward_data(src_any, dst_any, fwd))
            if not PIN_BACKWARD_DATA_LAYOUT or chosen.pd.md(dnnl.query_diff_dst_md) == grad.desc:
                return chosen
            # oneDNN picked other layouts than the gradient has (strided convs on AVX2):
            # gradients in the forward's layouts save two reorders of activation size, unless
            # only the reference kernel takes them (a strided depthwise convolution in the
            # blocked layouts of its forward, on AVX2)
            return prefer(lambda: builder.primitive(*layer.backward_data(src.desc, grad.desc,
                                                                         fwd)),
                          lambda: chosen)

        def backward(output_grad):
            return steps.backward(output_grad, src, activation, output,
                                  result.activation_grad_applied_downstream, need_input_grad,
                                  backward_weights, backward_data)

        # conv's backward reads its output only for the activation's derivative
        result = Tensor(output, x.data_format, activation=activation,
                        backward_reads_memory=False)
        return result, backward

    # -- the steps of plan() --------------------------------------------------------------------
    def _primitives(self, builder, input_dims):
        """The descriptors of this layer's three primitives for input dims `input_dims`."""
        output_dims = self.output_dims(input_dims)
        pad_l, pad_r = self._padding(input_dims[2], input_dims[3])
        bias = (MemoryDesc.with_tag((self.filters,), dnnl.f32) if self.primitive_bias
                else None)
        return Primitives(
            CONVOLUTION, f"Conv2D '{self.name}' input {list(input_dims)} output "
            f"{list(output_dims)}", self.parameter_dims(input_dims)[self.kernel_name][0],
            builder.data_type, bias,
            (self.strides, tuple(d - 1 for d in self.dilation_rate),  # oneDNN counts the gaps
             pad_l, pad_r))

    def _activation_descs(self, input_dims, data_type):
        """(src, dst) descriptors: oneDNN's choice, or the fixed activation_tag."""
        output_dims = self.output_dims(input_dims)
        if self.activation_tag is None:
            return MemoryDesc.any(input_dims, data_type), MemoryDesc.any(output_dims, data_type)
        return (MemoryDesc.with_tag(input_dims, data_type, self.activation_tag),
                MemoryDesc.with_tag(output_dims, data_type, self.activation_tag))

    def _nhwc_under_amx(self, builder, input_dims, fwd, forward_into):
        """`fwd`, or the same convolution writing nhwc (`forward_into(nhwc)`) when it would
        write a blocked layout in a bf16 plan on AMX (see NHWC_OUTPUT_UNDER_AMX)."""
        if (not NHWC_OUTPUT_UNDER_AMX or builder.data_type != dnnl.bf16
                or self.activation_tag is not None or self.groups != 1
                or not cpu_has(dnnl.cpu_isa_avx512_core_amx)):
            return fwd
        nhwc = MemoryDesc.with_tag(self.output_dims(input_dims), builder.data_type, dnnl.acdb)
        if fwd.pd.md(dnnl.query_dst_md) == nhwc:
            return fwd
        return prefer(lambda: forward_into(nhwc), lambda: fwd)

    def _backward_weights_descs(self, input_dims, data_type, src, dst):
        """(src, diff_dst) descriptors of backward-weights: the activations' own, or oneDNN's
        choice for a pinned plain layout on enough channels (see
        OWN_LAYOUT_BACKWARD_WEIGHTS_CHANNELS)."""
        if (self.activation_tag is None or self.groups != 1
                or input_dims[1] < OWN_LAYOUT_BACKWARD_WEIGHTS_CHANNELS):
            return src, dst
        return (MemoryDesc.any(input_dims, data_type),
                MemoryDesc.any(self.output_dims(input_dims), data_type))

    def _depthwise_weights(self, builder, input_dims, backward_weights):
        """Pass.plan_weights for a depthwise convolution oneDNN would differentiate with its
        gemm or reference kernel (kernels other than 3x3): depthwise_weights.py."""
        if not (builder.training and self.groups > 1
                and self.groups == input_dims[1] == self.filters
                and worth_replacing(backward_weights())):
            return None
        top_left = self._padding(input_dims[2], input_dims[3])[0]
        geometry = (self.kernel_size, self.strides, self.dilation_rate, top_left)
        return lambda src, grad, weight_grads: plan_depthwise_weights(
            builder, self, src, grad, weight_grads, geometry)

    def _folded_affine(self, builder):
        """(post-ops, their execution arguments) of a folded batch norm's scale and shift."""
        if self.channel_affine is None:
            return NONE, {}
        if builder.training:
            raise ValueError(f"Conv2D '{self.name}': a folded batch norm is for inference "
                             "plans only")
        scale, shift = self.channel_affine.plan(builder, self.filters)
        post = binary(dnnl.binary_mul, scale.desc) + binary(dnnl.binary_add, shift.desc)
        return post, {post_op_arg(0): scale, post_op_arg(1): shift}

    def _weight_grads(self, builder, bias_desc):
        """Pass's weight_grads: None for a frozen layer."""
        if not self.wants_weight_grads(builder):
            return None
        return lambda weights_desc: self.weight_grad_targets(builder, weights_desc, bias_desc)
