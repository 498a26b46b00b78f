"""Element-wise math that is not a Keras activation (keras.ops.abs, sqrt, log, square, clip,
a scalar power, and arithmetic with a Python number: x * 2, x + 1, 1 / x, maximum(x, 0.5)),
as one oneDNN eltwise primitive in the input's layout; backward is the same algorithm's
eltwise backward from the saved input.

oneDNN's algorithms with their (alpha, beta):
    linear   alpha * x + beta                      square  x * x
    abs      |x|                                   sqrt    sqrt(x)
    log      ln(x)                                 pow     alpha * x ** beta
    clip_v2  min(max(x, alpha), beta)
"""

from ..binding import constants as dnnl
from ..binding.descriptor import descriptor
from .base import Op

# oneDNN 3.x's dnnl_alg_kind_t values not in binding/constants.py
ELTWISE_SQUARE, ELTWISE_ABS, ELTWISE_SQRT, ELTWISE_LOG = 35, 36, 37, 45

ALGORITHMS = {"linear": dnnl.eltwise_linear, "square": ELTWISE_SQUARE, "abs": ELTWISE_ABS,
              "sqrt": ELTWISE_SQRT, "log": ELTWISE_LOG, "pow": dnnl.eltwise_pow,
              "clip": dnnl.eltwise_clip_v2}


class UnaryOp(Op):
    """Args: name, function (a key of ALGORITHMS), alpha, beta (floats, see above)."""

    def __init__(self, name, function, alpha=0.0, beta=0.0):
        if function not in ALGORITHMS:
            raise ValueError(f"Unary '{name}': argument function must be one of "
                             f"{sorted(ALGORITHMS)}, got {function!r}")
        self.name, self.function = name, function
        self.alpha, self.beta = float(alpha), float(beta)

    def output_dims(self, input_dims):
        return tuple(input_dims)

    def forward(self, builder, x, need_input_grad=True):
        desc = x.memory.desc
        alg, alpha, beta = ALGORITHMS[self.function], self.alpha, self.beta
        shapes = f"{self.function} '{self.name}' {desc} alpha {alpha} beta {beta}"

        def forward_pd(prop_kind):
            return builder.primitive(*descriptor(
                "dnnl_eltwise_forward_primitive_desc_create", "eltwise forward", shapes,
                prop_kind, alg, desc, desc, alpha, beta))

        fwd = forward_pd(builder.prop_kind)
        output = builder.allocate(desc)
        builder.add_forward(builder.bind(fwd, {dnnl.ARG_SRC: x.memory, dnnl.ARG_DST: output},
                                         f"{self.name} {self.function}"))

        def backward(output_grad):
            if not need_input_grad:
                return None
            hint = forward_pd(dnnl.forward_training)
            bwd = builder.primitive(*descriptor(
                "dnnl_eltwise_backward_primitive_desc_create", "eltwise backward", shapes, alg,
                desc, desc, desc, alpha, beta, hint.pd))
            grad = builder.reorder(output_grad, desc, f"{self.name} gradient", backward=True)
            input_grad = grad if builder.writable(grad) else builder.allocate(desc)
            builder.add_backward(builder.bind(bwd, {
                dnnl.ARG_SRC: x.memory, dnnl.ARG_DIFF_DST: grad, dnnl.ARG_DIFF_SRC: input_grad},
                f"{self.name} {self.function} backward"))
            return input_grad

        return x.with_memory(output), backward
