"""UpSampling2DOp as oneDNN resampling forward / backward ('nearest' repeats each pixel,
'bilinear' interpolates with half-pixel centres, clamped at the border, as Keras's JAX
backend resizes), in the input's layout.
"""

from ..binding import constants as dnnl
from ..binding.descriptor import descriptor
from ..binding.memory import MemoryDesc
from .base import Op

ALGORITHMS = {"nearest": dnnl.resampling_nearest, "bilinear": dnnl.resampling_linear}


class UpSampling2DOp(Op):
    """Args: name, size (rows, columns factors), interpolation ('nearest' or 'bilinear')."""

    def __init__(self, name, size, interpolation="nearest"):
        self.name, self.size, self.interpolation = name, tuple(size), interpolation

    def output_dims(self, input_dims):
        n, c, h, w = input_dims
        return (n, c, h * self.size[0], w * self.size[1])

    def forward(self, builder, x, need_input_grad=True):
        if len(x.dims) != 4 or x.flattened:
            raise ValueError(f"UpSampling2D '{self.name}': expected a 4D input, got shape "
                             f"{x.keras_shape}")
        desc = x.memory.desc
        out_dims = self.output_dims(x.dims)
        dst_any = MemoryDesc.any(out_dims, desc.data_type)
        alg = ALGORITHMS[self.interpolation]
        shapes = f"UpSampling2D '{self.name}' {desc} -> {list(out_dims)} {self.interpolation}"
        # factors None: oneDNN takes them from the two descriptors' dims
        fwd = builder.primitive(*descriptor(
            "dnnl_resampling_forward_primitive_desc_create", "resampling forward", shapes,
            builder.prop_kind, alg, None, desc, dst_any))
        output = builder.allocate(fwd.pd.md(dnnl.query_dst_md))
        builder.add_forward(builder.bind(fwd, {dnnl.ARG_SRC: x.memory, dnnl.ARG_DST: output},
                                         f"{self.name} forward"))

        def backward(output_grad):
            if not need_input_grad:
                return None
            bwd = builder.primitive(*descriptor(
                "dnnl_resampling_backward_primitive_desc_create", "resampling backward", shapes,
                alg, None, desc, output.desc, fwd.pd))
            grad = builder.reorder(output_grad, bwd.pd.md(dnnl.query_diff_dst_md),
                                   f"{self.name} gradient to layout", backward=True)
            input_grad = builder.allocate(bwd.pd.md(dnnl.query_diff_src_md))
            builder.add_backward(builder.bind(bwd, {dnnl.ARG_DIFF_DST: grad,
                                                    dnnl.ARG_DIFF_SRC: input_grad},
                                              f"{self.name} backward"))
            return input_grad

        return x.with_memory(output), backward
