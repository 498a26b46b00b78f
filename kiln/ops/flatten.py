"""Flatten: free. The 4D memory stays in its blocked layout; only the Keras view becomes
(N, features). A following Dense reads the 4D memory directly with 4D weights whose Keras
layout encodes the feature order, so no reorder is needed on either pass."""


from .base import Op


class Flatten(Op):
    def __init__(self, name):
        self.name = name

    def output_dims(self, input_dims):
        return tuple(input_dims)  # logical dims are unchanged; the Keras shape is (N, prod)

    def parameter_dims(self, input_dims):
        return {}

    def forward(self, builder, x, need_input_grad=True):
        out = x.with_memory(x.memory)
        if len(x.dims) > 2:
            out.flattened = True
        return out, lambda output_grad: output_grad
