"""DenseOp (inner product): shape rule, forward (bias + activation as post-ops) and backward.

A DenseOp after FlattenOp reads the 4D blocked activation directly with 4D weights (units, C, H, W);
its Keras kernel (features, units) maps onto them with a tag that encodes the flattened feature
order, (H, W, C) in both data formats as Keras flattens. So FlattenOp costs nothing.
"""

from ..binding import constants as dnnl
from ..binding.memory import MemoryDesc
from .base import Op
from .conv_family import INNER_PRODUCT, Pass, Primitives
from .eltwise import post_ops
from .layout_preference import prefer
from .tensor import CHANNELS_LAST, Tensor


class DenseOp(Op):
    """Args: name, units, activation (None/'linear'/'relu'/'tanh'/'sigmoid'), use_bias,
    kernel_name (the kernel parameter is "<name>/<kernel_name>": a custom layer's
    `keras.ops.matmul(x, self.w)` reads its weight 'w')."""

    def __init__(self, name, units, activation=None, use_bias=True, kernel_name="kernel"):
        self.name = name
        self.units = units
        self.activation = activation
        self.use_bias = use_bias
        self.kernel_name = kernel_name

    def replace(self, **changes):
        """A new DenseOp with `changes` to the arguments (a fused activation); this one is left
        as it is."""
        arguments = {"name": self.name, "units": self.units, "activation": self.activation,
                     "use_bias": self.use_bias, "kernel_name": self.kernel_name}
        return DenseOp(**{**arguments, **changes})

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
        kernel = f"{self.name}/{self.kernel_name}"
        layer = Primitives(
            INNER_PRODUCT, f"Dense '{self.name}' input {list(input_dims)} output "
            f"{list(output_dims)}", self.parameter_dims(input_dims)[self.kernel_name][0], dt,
            MemoryDesc.with_tag((self.units,), dnnl.f32) if self.use_bias else None)
        dst_any = MemoryDesc.any(output_dims, dt)

        def forward(src_desc):
            return builder.primitive(*layer.forward(builder.prop_kind, src_desc, dst_any,
                                                    post_ops(self.activation)))

        # Read the input in the layout it already has; let oneDNN choose only if it can't.
        fwd = prefer(lambda: forward(x.memory.desc),
                     lambda: forward(MemoryDesc.any(input_dims, dt)))
        src = builder.reorder(x.memory, fwd.pd.md(dnnl.query_src_md), f"{self.name} input")

        def backward_weights():
            return builder.primitive(*layer.backward_weights(src.desc, dst_any, fwd))

        def backward_data(grad):
            # Reading the weights in forward's layout saves a per-step reorder of the kernel
            # (docs/performance.md, 'Decisions and their measurements'); let oneDNN choose
            # only if it can't.
            return prefer(lambda: builder.primitive(*layer.backward_data(
                              src.desc, dst_any, fwd, fwd.pd.md(dnnl.query_weights_md))),
                          lambda: builder.primitive(*layer.backward_data(src.desc, dst_any,
                                                                         fwd)))

        steps = Pass.over_parameters(builder, self.name, kernel, layer.bias, backward_weights)
        output = builder.allocate(fwd.pd.md(dnnl.query_dst_md))
        steps.forward(fwd, src, output, steps.bias())

        def backward(output_grad):
            return steps.backward(output_grad, src, self.activation, output, False,
                                  need_input_grad, backward_weights, backward_data)

        return Tensor(output, x.data_format, flattened=False), backward
