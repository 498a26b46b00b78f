"""2D transposed convolution (Keras Conv2DTranspose): shape rule, forward and backward.

oneDNN has it as its own primitives, deconvolution forward / backward-data / backward-weights
(with DIFF_BIAS), `format_tag any` layouts and the activation fused as a post-op, as for
Conv2D. Keras's padding rule (`padding` fixes a base shape, `output_padding` adds on the
right) is converted to oneDNN's left / right padding here; oneDNN takes a negative right
padding (an output shorter than the full transposed convolution) as Keras's rule needs it.
"""

from ..binding import constants as dnnl
from ..binding.errors import DnnlError
from ..binding.memory import MemoryDesc, layout_key, to_dims
from ..binding.primitive import Attributes, PrimitiveDesc, default_attributes
from .base import Op
from .conv2d import dilated_kernel, forward_kind
from .eltwise import eltwise_backward, post_ops
from .tensor import Tensor


def transpose_padding(kernel, stride, dilation, padding, output_padding):
    """(left, right) padding of the full transposed convolution in oneDNN's sense (pixels cut
    off each side; negative adds zeros), from Keras's rule (keras/src/backend/common/
    backend_utils.py, which pads the stride-dilated input by (jax_left, jax_right))."""
    span = dilated_kernel(kernel, dilation)
    if padding == "valid":
        if output_padding is None:
            output_padding = max(span, stride) - span
        jax_left, jax_right = span - 1, span - 1 + output_padding
    else:
        if output_padding is None:
            total = stride + span - 2
        else:
            total = span + span % 2 - 2 + output_padding
        jax_left = min(total // 2 + total % 2, span - 1)
        jax_right = total - jax_left
    return span - 1 - jax_left, span - 1 - jax_right


def transpose_output_length(length, kernel, stride, dilation, padding, output_padding):
    left, right = transpose_padding(kernel, stride, dilation, padding, output_padding)
    return (length - 1) * stride + dilated_kernel(kernel, dilation) - left - right


# Run in a blocked input's layout rather than reorder it (see forward); not yet timed against
# oneDNN's own choice, hence the switch.
PIN_INPUT_LAYOUT = True


def _blocked(desc):
    """Whether `desc` is neither of the plain 4D activation layouts (nhwc, nchw)."""
    return all(desc != MemoryDesc.with_tag(desc.dims, desc.data_type, tag)
               for tag in (dnnl.acdb, dnnl.abcd))


def _unless_reference(chosen, make_pinned, untrusted=()):
    """`make_pinned()` (a primitive in layouts kiln prefers) unless oneDNN has only its
    reference kernel for it, one of the `untrusted` implementations, or cannot make it; else
    `chosen`."""
    try:
        pinned = make_pinned()
    except DnnlError:
        return chosen
    implementation = pinned.pd.implementation
    if implementation.startswith("ref") or any(name in implementation for name in untrusted):
        return chosen
    return pinned


def untrusted_backward_weights(strides):
    """Implementations not to pin for backward-weights: oneDNN 3.2's jit_1x1 kernel, given
    the forward's nhwc layouts and a stride above 1, returns a wrong kernel gradient (always
    for 3 input channels, about one run in four for 2 with two threads; tests/ops
    test_conv2d_transpose 1x1 cases); in oneDNN's own layouts it is right."""
    return ("jit_1x1",) if max(strides) > 1 else ()


class Conv2DTranspose(Op):
    """Args:
        name: the layer name (parameter names, messages).
        filters, kernel_size, strides, dilation_rate: ints / pairs of ints.
        padding: 'valid' or 'same'; output_padding: None or a pair of ints (Keras's rule).
        activation: None or a fusable activation (a post-op); use_bias.

    The kernel is Keras's (kh, kw, filters, in): logical (filters, in, kh, kw) in tag cdab.
    """

    def __init__(self, name, filters, kernel_size, strides=(1, 1), padding="valid",
                 output_padding=None, activation=None, use_bias=True, dilation_rate=(1, 1)):
        self.name = name
        self.filters = filters
        self.kernel_size = tuple(kernel_size)
        self.strides = tuple(strides)
        self.padding = padding
        self.output_padding = None if output_padding is None else tuple(output_padding)
        self.activation = activation
        self.use_bias = use_bias
        self.dilation_rate = tuple(dilation_rate)

    def _axis(self, i):
        return (self.kernel_size[i], self.strides[i], self.dilation_rate[i], self.padding,
                None if self.output_padding is None else self.output_padding[i])

    # -- shape rule ---------------------------------------------------------------------------
    def output_dims(self, input_dims):
        n, _, h, w = input_dims
        out = [transpose_output_length(length, *self._axis(i)) for i, length in enumerate((h, w))]
        if min(out) <= 0:
            raise ValueError(f"Conv2DTranspose '{self.name}': input of height x width {h}x{w} "
                             f"gives an empty output with padding '{self.padding}' and "
                             f"output_padding {self.output_padding}")
        return (n, self.filters, *out)

    def parameter_dims(self, input_dims):
        kh, kw = self.kernel_size
        dims = {"kernel": ((self.filters, input_dims[1], kh, kw), dnnl.cdab)}
        if self.use_bias:
            dims["bias"] = ((self.filters,), dnnl.a)
        return dims

    # -- forward and backward -------------------------------------------------------------------
    def forward(self, builder, x, need_input_grad=True):
        input_dims, output_dims = x.dims, self.output_dims(x.dims)
        weight_dims = self.parameter_dims(input_dims)["kernel"][0]
        pads = [transpose_padding(*self._axis(i)) for i in range(2)]
        pad_l, pad_r = (pads[0][0], pads[1][0]), (pads[0][1], pads[1][1])
        dt = builder.data_type
        geometry = (tuple(input_dims), output_dims, self.kernel_size, self.strides, pad_l,
                    pad_r, self.dilation_rate, self.use_bias)
        shapes = (f"Conv2DTranspose '{self.name}' input {list(input_dims)} output "
                  f"{list(output_dims)}")
        src_any, dst_any = MemoryDesc.any(input_dims, dt), MemoryDesc.any(output_dims, dt)
        w_any = MemoryDesc.any(weight_dims, dt)
        w_grad_any = MemoryDesc.any(weight_dims, dnnl.f32)  # f32 even when activations are bf16
        bias_desc = MemoryDesc.with_tag((self.filters,), dnnl.f32) if self.use_bias else None
        bias_handle = bias_desc.handle if bias_desc is not None else None
        geometry_args = (to_dims(self.strides), to_dims(tuple(d - 1 for d in self.dilation_rate)),
                         to_dims(pad_l), to_dims(pad_r))
        kind = forward_kind(builder)

        def make_forward(src_desc):
            def make():
                attributes = Attributes(post_ops(self.activation))  # alive until created
                return PrimitiveDesc(
                    "dnnl_deconvolution_forward_primitive_desc_create", "deconvolution forward",
                    shapes, kind, dnnl.deconvolution_direct, src_desc.handle, w_any.handle,
                    bias_handle, dst_any.handle, *geometry_args, attributes.handle)
            return make

        fwd = builder.primitive(("deconv fwd", kind, dt, geometry, self.activation),
                                make_forward(src_any))
        if (PIN_INPUT_LAYOUT and _blocked(x.memory.desc)
                and fwd.pd.md(dnnl.query_src_md) != x.memory.desc):
            # oneDNN's own choice on AVX2 is brgconv in nhwc: after a convolution that wrote
            # a blocked layout, the input's layout saves reordering the input twice (forward,
            # backward-weights) and the output gradient twice (both backward passes)
            fwd = _unless_reference(fwd, lambda: builder.primitive(
                ("deconv fwd", kind, dt, geometry, self.activation,
                 layout_key(x.memory.desc)), make_forward(x.memory.desc)))
        src_desc, dst_desc = fwd.pd.md(dnnl.query_src_md), fwd.pd.md(dnnl.query_dst_md)

        def make_backward_weights(src_layout, dst_layout):
            return lambda: PrimitiveDesc(
                "dnnl_deconvolution_backward_weights_primitive_desc_create",
                "deconvolution backward weights", shapes, dnnl.deconvolution_direct,
                src_layout.handle, w_grad_any.handle, bias_handle, dst_layout.handle,
                *geometry_args, fwd.pd.handle, default_attributes().handle)

        def backward_weights():
            """In the forward's layouts, unless only the reference kernel takes them."""
            chosen = builder.primitive(("deconv bwd weights", dt, geometry),
                                       make_backward_weights(src_any, dst_any))
            return _unless_reference(chosen, lambda: builder.primitive(
                ("deconv bwd weights", dt, geometry, layout_key(src_desc),
                 layout_key(dst_desc)), make_backward_weights(src_desc, dst_desc)),
                untrusted_backward_weights(self.strides))

        kernel = f"{self.name}/kernel"
        if builder.training and dt != dnnl.f32:
            builder.master_layout(kernel, backward_weights().pd.md(dnnl.query_diff_weights_md))
        src = builder.reorder(x.memory, fwd.pd.md(dnnl.query_src_md), f"{self.name} input")
        output = builder.allocate(fwd.pd.md(dnnl.query_dst_md))
        args = {dnnl.ARG_SRC: src,
                dnnl.ARG_WEIGHTS: builder.param(kernel, fwd.pd.md(dnnl.query_weights_md)),
                dnnl.ARG_DST: output}
        if self.use_bias:
            args[dnnl.ARG_BIAS] = builder.param(f"{self.name}/bias", bias_desc)
        builder.add_forward(builder.bind(fwd, args, f"{self.name} forward"))

        def backward(output_grad):
            grad = output_grad
            if not result.activation_grad_applied_downstream:
                grad = eltwise_backward(builder, self.activation, output, output_grad, self.name)
            if builder.wants_grad(kernel):  # not for a frozen layer
                bwd_w = backward_weights()
                w_args = {
                    dnnl.ARG_SRC: builder.reorder(src, bwd_w.pd.md(dnnl.query_src_md),
                                                  f"{self.name} input for weights", backward=True),
                    dnnl.ARG_DIFF_DST: builder.reorder(
                        grad, bwd_w.pd.md(dnnl.query_diff_dst_md),
                        f"{self.name} gradient for weights", backward=True),
                    dnnl.ARG_DIFF_WEIGHTS: builder.param_grad(
                        kernel, bwd_w.pd.md(dnnl.query_diff_weights_md))}
                if self.use_bias:
                    w_args[dnnl.ARG_DIFF_BIAS] = builder.param_grad(f"{self.name}/bias", bias_desc)
                builder.add_backward(builder.bind(bwd_w, w_args, f"{self.name} backward weights"))
            if not need_input_grad:
                return None
            def make_backward_data(src_layout, dst_layout):
                return lambda: PrimitiveDesc(
                    "dnnl_deconvolution_backward_data_primitive_desc_create",
                    "deconvolution backward data", shapes, dnnl.deconvolution_direct,
                    src_layout.handle, w_any.handle, dst_layout.handle, *geometry_args,
                    fwd.pd.handle, default_attributes().handle)

            bwd_d = builder.primitive(("deconv bwd data", dt, geometry),
                                      make_backward_data(src_any, dst_any))
            bwd_d = _unless_reference(bwd_d, lambda: builder.primitive(
                ("deconv bwd data", dt, geometry, layout_key(src_desc), layout_key(dst_desc)),
                make_backward_data(src_desc, dst_desc)))
            input_grad = builder.allocate(bwd_d.pd.md(dnnl.query_diff_src_md))
            builder.add_backward(builder.bind(bwd_d, {
                dnnl.ARG_DIFF_DST: builder.reorder(
                    grad, bwd_d.pd.md(dnnl.query_diff_dst_md),
                    f"{self.name} gradient for data", backward=True),
                dnnl.ARG_WEIGHTS: builder.param(kernel, bwd_d.pd.md(dnnl.query_weights_md)),
                dnnl.ARG_DIFF_SRC: input_grad}, f"{self.name} backward data"))
            return input_grad

        result = Tensor(output, x.data_format, activation=self.activation,
                        backward_reads_memory=False)
        return result, backward
