"""Dense (inner product): shape rule, forward (bias + activation as post-ops) and backward.

A Dense after Flatten reads the 4D blocked activation directly with 4D weights (units, C, H, W);
its Keras kernel (features, units) maps onto them with a tag that encodes the flattened feature
order, (H, W, C) in both data formats as Keras flattens. So Flatten costs nothing.
"""

from ..binding import constants as dnnl
from ..binding.errors import DnnlError
from ..binding.memory import MemoryDesc, layout_key
from ..binding.primitive import Attributes, PrimitiveDesc, default_attributes
from .base import Op
from .eltwise import eltwise_backward, post_ops
from .tensor import CHANNELS_LAST, Tensor


class Dense(Op):
    """Args: name, units, activation (None/'linear'/'relu'/'tanh'/'sigmoid'), use_bias,
    kernel_name (the kernel parameter is "<name>/<kernel_name>": a custom layer's
    `keras.ops.matmul(x, self.w)` reads its weight 'w')."""

    def __init__(self, name, units, activation=None, use_bias=True, kernel_name="kernel"):
        self.name = name
        self.units = units
        self.activation = activation
        self.use_bias = use_bias
        self.kernel_name = kernel_name

    def output_dims(self, input_dims):
        return (input_dims[0], self.units)

    def parameter_dims(self, input_dims, data_format=CHANNELS_LAST):
        """Kernel dims (units, *features) and the tag of the Keras (features, units) layout
        (`data_format` is accepted for symmetry; the feature order is the same in both)."""
        if len(input_dims) == 2:
            dims = {self.kernel_name: ((self.units, input_dims[1]), dnnl.ba)}
        else:
            # Keras flattens (H, W, C) in both data formats: rows of the Keras kernel are
            # (h, w, c)-ordered, i.e. the logical (units, C, H, W) weights in tag cdba
            dims = {self.kernel_name: ((self.units, *input_dims[1:]), dnnl.cdba)}
        if self.use_bias:
            dims["bias"] = ((self.units,), dnnl.a)
        return dims

    def forward(self, builder, x, need_input_grad=True):
        if len(x.dims) == 4 and not x.flattened:
            raise ValueError(f"Dense '{self.name}': expected a 2D input (batch, features), got "
                             f"shape {x.keras_shape}; add a Flatten layer before it")
        dt = builder.data_type
        input_dims = x.dims
        output_dims = self.output_dims(input_dims)
        weight_dims = self.parameter_dims(input_dims)[self.kernel_name][0]
        kernel = f"{self.name}/{self.kernel_name}"
        shapes = f"Dense '{self.name}' input {list(input_dims)} output {list(output_dims)}"
        w_any, dst_any = MemoryDesc.any(weight_dims, dt), MemoryDesc.any(output_dims, dt)
        w_grad_any = MemoryDesc.any(weight_dims, dnnl.f32)  # f32 even when activations are bf16
        bias_desc = MemoryDesc.with_tag((self.units,), dnnl.f32) if self.use_bias else None
        bias_handle = bias_desc.handle if bias_desc is not None else None

        def make_forward(src_desc):
            attributes = Attributes(post_ops(self.activation))
            return PrimitiveDesc(
                "dnnl_inner_product_forward_primitive_desc_create", "inner product forward",
                shapes, builder.prop_kind, src_desc.handle, w_any.handle, bias_handle,
                dst_any.handle, attributes.handle)

        # Read the input in the layout it already has; let oneDNN choose only if it can't.
        src_desc = x.memory.desc
        try:
            fwd = builder.primitive(("ip fwd", builder.prop_kind, layout_key(src_desc),
                                     output_dims, self.use_bias, self.activation),
                                    lambda: make_forward(src_desc))
        except DnnlError:
            src_desc = MemoryDesc.any(input_dims, dt)
            fwd = builder.primitive(("ip fwd", builder.prop_kind, ("any", input_dims, dt),
                                     output_dims, self.use_bias, self.activation),
                                    lambda: make_forward(src_desc))
        src = builder.reorder(x.memory, fwd.pd.md(dnnl.query_src_md), f"{self.name} input")
        src_desc = src.desc
        geometry = (layout_key(src_desc), output_dims, self.use_bias)

        def backward_weights():
            return builder.primitive(("ip bwd weights", geometry), lambda: PrimitiveDesc(
                "dnnl_inner_product_backward_weights_primitive_desc_create",
                "inner product backward weights", shapes, src_desc.handle, w_grad_any.handle,
                bias_handle, dst_any.handle, fwd.pd.handle, default_attributes().handle))

        if builder.training and dt != dnnl.f32:
            # bf16 compute keeps f32 master weights in the layout their gradient comes in.
            builder.master_layout(kernel,
                                  backward_weights().pd.md(dnnl.query_diff_weights_md))
        args = {dnnl.ARG_SRC: src,
                dnnl.ARG_WEIGHTS: builder.param(kernel,
                                                fwd.pd.md(dnnl.query_weights_md)),
                dnnl.ARG_DST: builder.allocate(fwd.pd.md(dnnl.query_dst_md))}
        if self.use_bias:
            args[dnnl.ARG_BIAS] = builder.param(f"{self.name}/bias", bias_desc)
        builder.add_forward(builder.bind(fwd, args, f"{self.name} forward"))
        output = args[dnnl.ARG_DST]

        def backward(output_grad):
            grad = eltwise_backward(builder, self.activation, output, output_grad, self.name)
            if builder.wants_grad(kernel):  # not for a frozen layer
                bwd_w = backward_weights()
                w_args = {
                    dnnl.ARG_SRC: src,
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
            def make_backward_data(weights_desc):
                return lambda: PrimitiveDesc(
                    "dnnl_inner_product_backward_data_primitive_desc_create",
                    "inner product backward data", shapes, src_desc.handle, weights_desc.handle,
                    dst_any.handle, fwd.pd.handle, default_attributes().handle)

            # Reading the weights in forward's layout saves a per-step reorder of the kernel
            # (0.8 ms for mnist_cnn's 9216x128 dense); let oneDNN choose only if it can't.
            forward_weights = fwd.pd.md(dnnl.query_weights_md)
            try:
                bwd_d = builder.primitive(("ip bwd data", geometry, "forward weights"),
                                          make_backward_data(forward_weights))
            except DnnlError:
                bwd_d = builder.primitive(("ip bwd data", geometry),
                                          make_backward_data(w_any))
            input_grad = builder.allocate(bwd_d.pd.md(dnnl.query_diff_src_md))
            builder.add_backward(builder.bind(bwd_d, {
                dnnl.ARG_DIFF_DST: builder.reorder(
                    grad, bwd_d.pd.md(dnnl.query_diff_dst_md),
                    f"{self.name} gradient for data", backward=True),
                dnnl.ARG_WEIGHTS: builder.param(kernel,
                                                bwd_d.pd.md(dnnl.query_weights_md)),
                dnnl.ARG_DIFF_SRC: input_grad}, f"{self.name} backward data"))
            return input_grad

        return Tensor(output, x.data_format, flattened=False), backward
