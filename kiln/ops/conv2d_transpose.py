"""2D transposed convolution (Keras Conv2DTranspose): shape rule, forward and backward.

oneDNN has it as its own primitives, deconvolution forward / backward-data / backward-weights
(with DIFF_BIAS), `format_tag any` layouts and the activation fused as a post-op, planned on
the convolution family's path (conv_family.py) as Conv2DOp. Keras's padding rule (`padding`
fixes a base shape, `output_padding` adds on the right) is converted to oneDNN's left / right
padding here; oneDNN takes a negative right padding (an output shorter than the full
transposed convolution) as Keras's rule needs it.
"""

from ..binding import constants as dnnl
from ..binding.memory import MemoryDesc
from .base import Op
from .conv2d import dilated_kernel, forward_kind
from .conv_family import DECONVOLUTION, Pass, Primitives
from .eltwise import post_ops
from .layout_preference import prefer
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


def untrusted_backward_weights(strides):
    """Implementations not to pin for backward-weights: oneDNN 3.2's jit_1x1 kernel, given
    the forward's nhwc layouts and a stride above 1, returns a wrong kernel gradient (always
    for 3 input channels, about one run in four for 2 with two threads; tests/ops
    test_conv2d_transpose 1x1 cases); in oneDNN's own layouts it is right."""
    return ("jit_1x1",) if max(strides) > 1 else ()


class Conv2DTransposeOp(Op):
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
        pads = [transpose_padding(*self._axis(i)) for i in range(2)]
        pad_l, pad_r = (pads[0][0], pads[1][0]), (pads[0][1], pads[1][1])
        dt = builder.data_type
        layer = Primitives(
            DECONVOLUTION, f"Conv2DTranspose '{self.name}' input {list(input_dims)} output "
            f"{list(output_dims)}", self.parameter_dims(input_dims)["kernel"][0], dt,
            MemoryDesc.with_tag((self.filters,), dnnl.f32) if self.use_bias else None,
            (self.strides, tuple(d - 1 for d in self.dilation_rate), pad_l, pad_r))
        src_any, dst_any = MemoryDesc.any(input_dims, dt), MemoryDesc.any(output_dims, dt)
        kind = forward_kind(builder)

        def forward(src_desc):
            return builder.primitive(*layer.forward(kind, src_desc, dst_any,
                                                    post_ops(self.activation)))

        fwd = forward(src_any)
        if (PIN_INPUT_LAYOUT and _blocked(x.memory.desc)
                and fwd.pd.md(dnnl.query_src_md) != x.memory.desc):
            # oneDNN's own choice on AVX2 is brgconv in nhwc: after a convolution that wrote
            # a blocked layout, the input's layout saves reordering the input twice (forward,
            # backward-weights) and the output gradient twice (both backward passes)
            chosen = fwd
            fwd = prefer(lambda: forward(x.memory.desc), lambda: chosen)
        src_desc, dst_desc = fwd.pd.md(dnnl.query_src_md), fwd.pd.md(dnnl.query_dst_md)

        def backward_weights():
            """In the forward's layouts, unless only the reference kernel takes them."""
            return prefer(
                lambda: builder.primitive(*layer.backward_weights(src_desc, dst_desc, fwd)),
                lambda: builder.primitive(*layer.backward_weights(src_any, dst_any, fwd)),
                untrusted_backward_weights(self.strides))

        def backward_data(grad):
            return prefer(
                lambda: builder.primitive(*layer.backward_data(src_desc, dst_desc, fwd)),
                lambda: builder.primitive(*layer.backward_data(src_any, dst_any, fwd)))

        steps = Pass.over_parameters(builder, self.name, f"{self.name}/kernel", layer.bias,
                                     backward_weights)
        src = builder.reorder(x.memory, src_desc, f"{self.name} input")
        output = builder.allocate(dst_desc)
        steps.forward(fwd, src, output, steps.bias())

        def backward(output_grad):
            return steps.backward(output_grad, src, self.activation, output,
                                  result.activation_grad_applied_downstream, need_input_grad,
                                  backward_weights, backward_data)

        result = Tensor(output, x.data_format, activation=self.activation,
                        backward_reads_memory=False)
        return result, backward
