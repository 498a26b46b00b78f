"""Rescaling: y = x * scale + offset, as oneDNN eltwise linear (alpha = scale, beta = offset)
in the input's layout; backward is eltwise linear's backward (dx = scale * dy)."""

from ..binding import constants as dnnl
from ..binding.memory import layout_key
from ..binding.primitive import PrimitiveDesc, default_attributes
from .base import Op


class Rescaling(Op):
    """Args: name, scale, offset (floats)."""

    def __init__(self, name, scale, offset=0.0):
        self.name, self.scale, self.offset = name, float(scale), float(offset)

    def output_dims(self, input_dims):
        return tuple(input_dims)

    def forward(self, builder, x, need_input_grad=True):
        desc = x.memory.desc
        alg, alpha, beta = dnnl.eltwise_linear, self.scale, self.offset
        shapes = f"Rescaling '{self.name}' {desc}"

        def forward_pd(prop_kind):
            return builder.primitive(
                ("eltwise fwd", prop_kind, alg, alpha, beta, layout_key(desc)),
                lambda: PrimitiveDesc("dnnl_eltwise_forward_primitive_desc_create",
                                      "eltwise forward", shapes, prop_kind, alg, desc.handle,
                                      desc.handle, alpha, beta, default_attributes().handle))

        fwd = forward_pd(builder.prop_kind)
        output = builder.allocate(desc)
        builder.add_forward(builder.bind(fwd, {dnnl.ARG_SRC: x.memory, dnnl.ARG_DST: output},
                                         f"{self.name} forward"))

        def backward(output_grad):
            if not need_input_grad:
                return None
            hint = forward_pd(dnnl.forward_training)
            bwd = builder.primitive(("eltwise bwd", alg, alpha, beta, layout_key(desc)),
                                    lambda: PrimitiveDesc(
                "dnnl_eltwise_backward_primitive_desc_create", "eltwise backward", shapes, alg,
                desc.handle, desc.handle, desc.handle, alpha, beta, hint.pd.handle,
                default_attributes().handle))
            grad = builder.reorder(output_grad, desc, f"{self.name} gradient", backward=True)
            input_grad = grad if builder.writable(grad) else builder.allocate(desc)
            builder.add_backward(builder.bind(bwd, {
                dnnl.ARG_SRC: x.memory, dnnl.ARG_DIFF_DST: grad, dnnl.ARG_DIFF_SRC: input_grad},
                f"{self.name} backward"))
            return input_grad

        return x.with_memory(output), backward
