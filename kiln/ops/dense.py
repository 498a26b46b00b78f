"""DenseOp (inner product): shape rule, forward (bias + activation as post-ops) and backward.

On a sequence (N, T, C) it applies to the last axis, as Keras: the same inner product on the
(N*T, C) view of the plain bytes, (N, T, units) out. On an image (not flattened) likewise, on
the last axis Keras shows (C for channels_last, as a 1x1 convolution; W for channels_first):
the (N*H*W, C) view of its nhwc bytes (ConvNeXt's pointwise Dense layers).

A DenseOp after FlattenOp reads the flattened activation in one of two ways, both in Keras's
feature order, (H, W, C) in both data formats:
- `flattened_as_matrix` (bf16 layers): the (N, H*W*C) matrix view of the activation's nhwc
  bytes (free when it is nhwc, as under AMX; one reorder otherwise), with the Keras kernel
  as the plain (units, features) weights. oneDNN runs its brgemm (AMX) inner product there,
  only a jit gemm on a 4D input.
- otherwise (f32): the 4D activation in its own (blocked) layout with 4D weights (units, C, H,
  W) whose tag cdba encodes the flattened order, so FlattenOp costs nothing. In f32 oneDNN's
  jit gemm on the blocked input beats its brgemm on the matrix view plus the reorder into
  nhwc (docs/performance.md, 'Decisions and their measurements').
"""

import numpy as np

from ..binding import constants as dnnl
from ..binding.memory import MemoryDesc
from .base import Op
from .conv_family import INNER_PRODUCT, Pass, Primitives
from .eltwise import post_ops
from .layout_preference import prefer
from .tensor import CHANNELS_LAST, Tensor, keras_shape, logical_dims


class DenseOp(Op):
    """Args: name, units, activation (None/'linear'/'relu'/'tanh'/'sigmoid'), use_bias,
    kernel_name (the kernel parameter is "<name>/<kernel_name>": a custom layer's
    `keras.ops.matmul(x, self.w)` reads its weight 'w'), image_format (the data format of a
    4D input that is not flattened: the op applies to its last Keras axis; None: a 4D input
    must come flattened), flattened_as_matrix (after Flatten: read the (N, H*W*C) matrix view
    of the nhwc bytes with 2D weights, else the 4D input with 4D weights; see above)."""

    def __init__(self, name, units, activation=None, use_bias=True, kernel_name="kernel",
                 image_format=None, flattened_as_matrix=False):
        self.name = name
        self.units = units
        self.activation = activation
        self.use_bias = use_bias
        self.kernel_name = kernel_name
        self.image_format = image_format
        self.flattened_as_matrix = flattened_as_matrix

    def replace(self, **changes):
        """A new DenseOp with `changes` to the arguments (a fused activation); this one is left
        as it is."""
        arguments = {"name": self.name, "units": self.units, "activation": self.activation,
                     "use_bias": self.use_bias, "kernel_name": self.kernel_name,
                     "image_format": self.image_format,
                     "flattened_as_matrix": self.flattened_as_matrix}
        return DenseOp(**{**arguments, **changes})

    def output_dims(self, input_dims):
        if len(input_dims) == 3:  # a sequence: the last axis is the features
            return (*input_dims[:2], self.units)
        if len(input_dims) == 4 and self.image_format is not None:  # per position
            shape = keras_shape(input_dims, self.image_format)
            return logical_dims((*shape[:-1], self.units), self.image_format)
        return (input_dims[0], self.units)

    def parameter_dims(self, input_dims, data_format=CHANNELS_LAST):
        """Kernel dims (units, *features) and the tag of the Keras (features, units) layout
        (`data_format` is accepted for symmetry; the feature order is the same in both)."""
        if len(input_dims) in (2, 3):
            dims = {self.kernel_name: ((self.units, input_dims[-1]), dnnl.ba)}
        elif self.image_format is not None:
            features = keras_shape(input_dims, self.image_format)[-1]
            dims = {self.kernel_name: ((self.units, features), dnnl.ba)}
        elif self.flattened_as_matrix:
            # rows of the Keras kernel are (h, w, c)-ordered, as the rows of the nhwc matrix
            # view forward() reads
            features = int(np.prod(input_dims[1:]))
            dims = {self.kernel_name: ((self.units, features), dnnl.ba)}
        else:
            # Keras flattens (H, W, C) in both data formats: rows of the Keras kernel are
            # (h, w, c)-ordered, i.e. the logical (units, C, H, W) weights in tag cdba
            dims = {self.kernel_name: ((self.units, *input_dims[1:]), dnnl.cdba)}
        if self.use_bias:
            dims["bias"] = ((self.units,), dnnl.a)
        return dims

    def forward(self, builder, x, need_input_grad=True):
        if len(x.dims) == 3 or (len(x.dims) == 4 and not x.flattened
                                and self.image_format is not None):
            return self._forward_sequence(builder, x, need_input_grad)
        if len(x.dims) == 4 and x.flattened and self.flattened_as_matrix:
            return self._forward_flattened(builder, x, need_input_grad)
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

    def _forward_sequence(self, builder, x, need_input_grad):
        """Dense on (N, T, C) or an image, as Keras applies it to the last axis: the inner
        product of the (rows, features) matrix the plain bytes in Keras's order already are
        (nhwc for a channels_last image), its (rows, units) output viewed back in the same
        order (Conv1DOp's views, one axis down)."""
        dt = builder.data_type
        shape = keras_shape(x.dims, x.data_format)
        features = shape[-1]
        rows = int(np.prod(shape[:-1]))
        out_dims = self.output_dims(x.dims)

        def plain(dims):
            tag = dnnl.acdb if len(dims) == 4 and x.data_format == CHANNELS_LAST else None
            return MemoryDesc.with_tag(dims, dt, tag)

        def matrix_view(memory, dims, label):
            """`memory` (any layout) as the (rows, last Keras axis) view of its plain bytes."""
            flat = builder.reorder(memory, plain(dims), label,
                                   backward=label.endswith("gradient"))
            return flat.view(MemoryDesc.with_tag((rows, keras_shape(dims, x.data_format)[-1]),
                                                 dt))

        inner = Tensor(matrix_view(x.memory, x.dims, f"{self.name} input"), x.data_format)
        inner, backward2 = self.forward(builder, inner, need_input_grad)
        matrix = builder.reorder(inner.memory, MemoryDesc.with_tag((rows, self.units), dt),
                                 f"{self.name} output to plain")
        # views keep their bytes: liveness sharing moves only buffers no view reads
        output = builder.keep(matrix).view(plain(out_dims))

        def backward(output_grad):
            inner.activation_grad_applied_downstream = result.activation_grad_applied_downstream
            grad2 = matrix_view(output_grad, out_dims, f"{self.name} output gradient")
            if not builder.writable(output_grad):
                builder.share(grad2)  # a view of a gradient other consumers read too
            grad = backward2(grad2)
            if grad is None:
                return None
            grad = builder.reorder(grad, MemoryDesc.with_tag((rows, features), dt),
                                   f"{self.name} input gradient to plain", backward=True)
            return builder.keep(grad).view(plain(x.dims))

        result = Tensor(output, x.data_format, activation=self.activation,
                        backward_reads_memory=False)
        return result, backward

    def _forward_flattened(self, builder, x, need_input_grad):
        """Dense after Flatten: the inner product of the (N, H*W*C) view of the input's nhwc
        bytes (one reorder into nhwc unless it is nhwc already); the (N, features) input
        gradient handed back as the same bytes viewed as nhwc, which the producer reorders
        like any gradient."""
        n, *image = x.dims
        data_type = x.memory.desc.data_type
        nhwc = MemoryDesc.with_tag(x.dims, data_type, dnnl.acdb)
        image_order = builder.reorder(x.memory, nhwc, f"{self.name} input to (h, w, c) order")
        matrix_desc = MemoryDesc.with_tag((n, int(np.prod(image))), data_type, dnnl.ab)
        matrix = Tensor(image_order.view(matrix_desc), x.data_format)
        result, matrix_backward = self.forward(builder, matrix, need_input_grad)

        def backward(output_grad):
            grad = matrix_backward(output_grad)
            if grad is None:
                return None
            plain = builder.reorder(grad, MemoryDesc.with_tag(matrix_desc.dims,
                                                              grad.desc.data_type, dnnl.ab),
                                    f"{self.name} input gradient to plain", backward=True)
            return plain.view(MemoryDesc.with_tag(x.dims, plain.desc.data_type, dnnl.acdb))

        return result, backward
