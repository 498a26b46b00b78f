"""2D max / average pooling: shape rule, forward (max keeps a workspace of argmax positions
for backward) and backward. Runs in whatever layout its input has: no reorder."""

from ..binding import constants as dnnl
from ..binding.descriptor import descriptor
from ..binding.memory import MemoryDesc
from .base import Op
from .conv2d import conv_output_length, same_padding
from .eltwise import FUSABLE, eltwise_backward, spec

ALGORITHMS = {"max": dnnl.pooling_max, "avg": dnnl.pooling_avg_exclude_padding}


class Pooling2DOp(Op):
    """Args: name, mode ('max' or 'avg'), pool_size, strides, padding ('valid' or 'same')."""

    per_image = True

    def __init__(self, name, mode, pool_size, strides, padding="valid"):
        self.name = name
        self.mode = mode
        self.pool_size = tuple(pool_size)
        self.strides = tuple(strides)
        self.padding = padding

    def output_dims(self, input_dims):
        n, c, h, w = input_dims
        out_h = conv_output_length(h, self.pool_size[0], self.strides[0], self.padding)
        out_w = conv_output_length(w, self.pool_size[1], self.strides[1], self.padding)
        if out_h <= 0 or out_w <= 0:
            layer = "MaxPooling2D" if self.mode == "max" else "AveragePooling2D"
            raise ValueError(f"{layer} '{self.name}': input of height x width {h}x{w} is "
                             f"smaller than pool_size {self.pool_size}")
        return (n, c, out_h, out_w)

    def parameter_dims(self, input_dims):
        return {}

    def _forward_primitive(self, builder, desc):
        """The oneDNN pooling forward for input `desc`, and what backward needs to match it."""
        output_dims = self.output_dims(desc.dims)
        if self.padding == "valid":
            pad_l, pad_r = (0, 0), (0, 0)
        else:
            (top, bottom), (left, right) = (
                same_padding(desc.dims[2], self.pool_size[0], self.strides[0]),
                same_padding(desc.dims[3], self.pool_size[1], self.strides[1]))
            pad_l, pad_r = (top, left), (bottom, right)
        dst_any = MemoryDesc.any(output_dims, builder.data_type)
        alg = ALGORITHMS[self.mode]
        shapes = f"pooling '{self.name}' input {list(desc.dims)} output {list(output_dims)}"
        geometry = (self.strides, self.pool_size, (0, 0), pad_l, pad_r)
        fwd = builder.primitive(*descriptor(
            "dnnl_pooling_forward_primitive_desc_create", "pooling forward", shapes,
            builder.prop_kind, alg, desc, dst_any, *geometry))
        return fwd, (alg, geometry, shapes, dst_any)

    def output_desc(self, builder, x):
        """The layout oneDNN's pooling gives its output for input `x` (fused ops match it)."""
        fwd, _ = self._forward_primitive(builder, x.memory.desc)
        return fwd.pd.md(dnnl.query_dst_md)

    def forward(self, builder, x, need_input_grad=True):
        source = x.memory
        desc = source.desc
        fwd, (alg, geometry, shapes, dst_any) = self._forward_primitive(builder, desc)
        output = builder.allocate(fwd.pd.md(dnnl.query_dst_md))
        args = {dnnl.ARG_SRC: source, dnnl.ARG_DST: output}
        workspace_desc = fwd.pd.md(dnnl.query_workspace_md)
        if workspace_desc is not None:
            args[dnnl.ARG_WORKSPACE] = builder.allocate(workspace_desc)
        builder.add_forward(builder.bind(fwd, args, f"{self.name} forward"))

        # max(f(z)) = f(max(z)) for the non-decreasing activations conv fuses, and max pooling
        # routes the gradient to the argmax only: so the activation's derivative can be applied
        # to the pooled gradient (4x smaller for 2x2) from the pooled output, exactly. Only
        # for the tensor's one consumer: another one's gradient (a U-Net's skip connection)
        # needs the derivative at every position, so the producer then applies it to the sum.
        activation = (x.activation if self.mode == "max" and x.activation in FUSABLE
                      and spec(x.activation).monotone and x.consumers == 1 else None)
        if activation is not None:
            x.activation_grad_applied_downstream = True

        def backward(output_grad):
            if not need_input_grad:
                return None
            if activation is not None:
                output_grad = eltwise_backward(builder, activation, output, output_grad,
                                               self.name)
            bwd = builder.primitive(*descriptor(
                "dnnl_pooling_backward_primitive_desc_create", "pooling backward", shapes, alg,
                desc, dst_any, *geometry, fwd.pd))
            input_grad = builder.allocate(bwd.pd.md(dnnl.query_diff_src_md))
            bwd_args = {dnnl.ARG_DIFF_DST: builder.reorder(
                            output_grad, bwd.pd.md(dnnl.query_diff_dst_md),
                            f"{self.name} gradient", backward=True),
                        dnnl.ARG_DIFF_SRC: input_grad}
            if workspace_desc is not None:
                bwd_args[dnnl.ARG_WORKSPACE] = args[dnnl.ARG_WORKSPACE]
            builder.add_backward(builder.bind(bwd, bwd_args, f"{self.name} backward"))
            return input_grad

        return x.with_memory(output), backward
