"""IdentityOp: the output is the input (same memory, no call); the gradient passes through."""

from .base import Op


class IdentityOp(Op):
    def __init__(self, name):
        self.name = name

    def output_dims(self, input_dims):
        return tuple(input_dims)

    def forward(self, builder, x, need_input_grad=True):
        # a new Tensor over the same memory: the producer's fused activation stays its own
        return x.with_memory(x.memory), lambda output_grad: output_grad
