"""PReLUOp: y = x for x > 0, alpha * x otherwise, alpha a learned weight broadcast over the batch
and the `shared_axes`, as oneDNN prelu forward / backward (which also reduces alpha's gradient
over the broadcast axes). Runs in the input's layout.
"""

from ..binding import constants as dnnl
from ..binding.descriptor import descriptor
from ..binding.memory import MemoryDesc
from .base import Op
from .tensor import CHANNELS_LAST, keras_shape, logical_dims

PLAIN_TAGS = {2: dnnl.ab, 3: dnnl.abc, 4: dnnl.abcd, 5: dnnl.abcde}


class PReLUOp(Op):
    """Args: name, shared_axes (Keras axes, batch = 0, over which alpha is shared)."""


    def __init__(self, name, shared_axes=()):
        self.name = name
        self.shared_axes = tuple(shared_axes or ())

    def output_dims(self, input_dims):
        return tuple(input_dims)

    def alpha_shape(self, input_dims, data_format=CHANNELS_LAST):
        """Keras's alpha shape: the input shape without the batch, 1 on the shared axes."""
        shape = list(keras_shape(input_dims, data_format)[1:])
        for axis in self.shared_axes:
            shape[axis - 1] = 1
        return tuple(shape)

    def parameter_dims(self, input_dims, data_format=CHANNELS_LAST):
        shape = (1, *self.alpha_shape(input_dims, data_format))
        dims = logical_dims(shape, data_format)
        if len(dims) == 4 and data_format == CHANNELS_LAST:
            return {"alpha": (dims, dnnl.acdb)}
        return {"alpha": (dims, PLAIN_TAGS[len(dims)])}

    def forward(self, builder, x, need_input_grad=True):
        if x.flattened:
            raise ValueError(f"PReLU '{self.name}': an input flattened from 4D is not "
                             "supported; apply it before the Flatten layer")
        desc = x.memory.desc
        alpha_dims = self.parameter_dims(x.dims, x.data_format)["alpha"][0]
        alpha_any = MemoryDesc.any(alpha_dims, dnnl.f32)
        shapes = f"PReLU '{self.name}' input {desc} alpha {list(alpha_dims)}"
        fwd = builder.primitive(*descriptor(
            "dnnl_prelu_forward_primitive_desc_create", "prelu forward", shapes,
            builder.prop_kind, desc, alpha_any, desc))
        alpha_name = f"{self.name}/alpha"
        alpha = builder.param(alpha_name, fwd.pd.md(dnnl.query_weights_md))
        output = builder.allocate(desc)
        builder.add_forward(builder.bind(fwd, {dnnl.ARG_SRC: x.memory, dnnl.ARG_WEIGHTS: alpha,
                                               dnnl.ARG_DST: output}, f"{self.name} forward"))

        def backward(output_grad):
            wants_alpha = builder.wants_grad(alpha_name)
            if not (need_input_grad or wants_alpha):
                return None
            bwd = builder.primitive(*descriptor(
                "dnnl_prelu_backward_primitive_desc_create", "prelu backward", shapes,
                desc, alpha_any, desc, alpha_any, desc, fwd.pd))
            grad = builder.reorder(output_grad, desc, f"{self.name} gradient", backward=True)
            input_grad = builder.allocate(desc)
            weights = builder.param(alpha_name, bwd.pd.md(dnnl.query_weights_md))
            diff_desc = bwd.pd.md(dnnl.query_diff_weights_md)
            # a frozen alpha still needs somewhere to write: the primitive computes both
            diff_alpha = (builder.param_grad(alpha_name, diff_desc) if wants_alpha
                          else builder.allocate(diff_desc))
            builder.add_backward(builder.bind(bwd, {
                dnnl.ARG_SRC: x.memory, dnnl.ARG_WEIGHTS: weights, dnnl.ARG_DIFF_DST: grad,
                dnnl.ARG_DIFF_SRC: input_grad, dnnl.ARG_DIFF_WEIGHTS: diff_alpha},
                f"{self.name} backward"))
            return input_grad if need_input_grad else None

        return x.with_memory(output), backward
