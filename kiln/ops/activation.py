"""A standalone activation (Keras `Activation` layer, the activation layers, or an activation
that could not be fused into its producer).

Each runs as the oneDNN eltwise algorithm of eltwise.py's table in the input's layout (a numba
kernel where oneDNN has none); activations whose derivative needs the input keep it for
backward. softmax / log_softmax run as oneDNN softmax over the last Keras axis (softmax.py).
"""

from .base import Op
from .eltwise import IDENTITY, NAMES, eltwise_backward, eltwise_forward, known, spec
from .softmax import SoftmaxOp

SOFTMAX = ("softmax", "log_softmax")
SUPPORTED = sorted(NAMES + ["linear", *SOFTMAX, "swish", "hard_swish"])


class ActivationOp(Op):
    """Args: name, activation (one of SUPPORTED, or a parameterized name from
    eltwise.activation_name)."""

    def __init__(self, name, activation):
        if activation is not None and activation not in IDENTITY + SOFTMAX \
                and not known(activation):
            raise ValueError(f"Activation '{name}': argument activation must be one of "
                             f"{SUPPORTED}, got {activation!r}")
        self.name = name
        self.activation = activation

    @property
    def per_image(self):
        # "softmax" stays out of sub-batches, as it always has (the sub-batch front used to
        # be an isinstance list that excluded it); every other activation runs per image
        return self.activation != "softmax"

    def output_dims(self, input_dims):
        return tuple(input_dims)

    def forward(self, builder, x, need_input_grad=True):
        if self.activation in IDENTITY:
            return x, lambda output_grad: output_grad
        if self.activation in SOFTMAX:
            return SoftmaxOp(self.name, -1, self.activation).forward(builder, x, need_input_grad)
        source = x.memory
        output = eltwise_forward(builder, self.activation, source, self.name)
        keep = source if spec(self.activation).reads == "src" else None

        def backward(output_grad):
            if not need_input_grad:
                return None
            return eltwise_backward(builder, self.activation, output, output_grad, self.name,
                                    source=keep)

        return x.with_memory(output), backward
