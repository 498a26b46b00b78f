"""A standalone activation (Keras `Activation` layer or an activation that could not be fused).

relu / tanh / sigmoid run as oneDNN eltwise primitives in the input's layout (backward reads the
saved output); softmax runs as oneDNN softmax forward / backward over the channel axis.
"""

from ..binding import constants as dnnl
from ..binding.memory import layout_key
from ..binding.primitive import PrimitiveDesc, default_attributes
from .base import Op
from .eltwise import ACTIVATIONS, IDENTITY, eltwise_backward, eltwise_forward

SUPPORTED = sorted(ACTIVATIONS) + ["linear", "softmax"]


class Activation(Op):
    """Args: name, activation (one of SUPPORTED)."""

    def __init__(self, name, activation):
        if activation not in SUPPORTED and activation is not None:
            raise ValueError(f"Activation '{name}': argument activation must be one of "
                             f"{SUPPORTED}, got {activation!r}")
        self.name = name
        self.activation = activation

    def output_dims(self, input_dims):
        return tuple(input_dims)

    def parameter_dims(self, input_dims):
        return {}

    def forward(self, builder, x, need_input_grad=True):
        if self.activation in IDENTITY:
            return x, lambda output_grad: output_grad
        if self.activation == "softmax":
            return self._softmax(builder, x)
        output = eltwise_forward(builder, self.activation, x.memory, self.name)
        return x.with_memory(output), lambda output_grad: eltwise_backward(
            builder, self.activation, output, output_grad, self.name)

    def _softmax(self, builder, x):
        if x.flattened:
            raise ValueError(f"Activation '{self.name}': softmax over a flattened 4D tensor is "
                             "not supported; apply it after a Dense layer")
        # Keras applies softmax on the last axis: channels for 2D and channels_last 4D.
        axis = 3 if (len(x.dims) == 4 and x.data_format == "channels_first") else 1
        desc = x.memory.desc
        key = (builder.prop_kind, layout_key(desc), axis)
        shapes = f"softmax '{self.name}' {desc}"
        fwd = builder.primitive(("softmax fwd", *key), lambda: PrimitiveDesc(
            "dnnl_softmax_forward_primitive_desc_create", "softmax forward", shapes,
            builder.prop_kind, dnnl.softmax_accurate, desc.handle, desc.handle, axis,
            default_attributes().handle))
        output = builder.allocate(desc)
        builder.add_forward(builder.bind(fwd, {dnnl.ARG_SRC: x.memory, dnnl.ARG_DST: output},
                                         f"{self.name} softmax"))

        def backward(output_grad):
            bwd = builder.primitive(("softmax bwd", *key), lambda: PrimitiveDesc(
                "dnnl_softmax_backward_primitive_desc_create", "softmax backward", shapes,
                dnnl.softmax_accurate, desc.handle, desc.handle, desc.handle, axis,
                fwd.pd.handle, default_attributes().handle))
            grad = builder.reorder(output_grad, desc, f"{self.name} gradient", backward=True)
            input_grad = builder.allocate(desc)
            builder.add_backward(builder.bind(bwd, {dnnl.ARG_DST: output, dnnl.ARG_DIFF_DST: grad,
                                                    dnnl.ARG_DIFF_SRC: input_grad},
                                              f"{self.name} softmax backward"))
            return input_grad

        return x.with_memory(output), backward
