"""A convolution with a residual block's add (and the relu after it) fused, for inference.

In a ResNet block `y = relu(x + bn(conv(h)))`, inference folds the batch norm into the
convolution (batch_norm_folding.py); the add then costs a whole pass that reads two tensors and
writes one. oneDNN applies it as a binary post-op of the convolution instead: the convolution
reads `x` while its output is still in registers and writes `y` directly. Training keeps the
separate AddOp, whose backward hands one gradient to both branches.

The op takes two inputs, (conv input, residual), in that order; weights and their names stay
the convolution's. It plans the convolution's own path (Conv2DOp.plan) with the residual and the
activation after the add passed as data: the convolution op itself is left as it is.
"""

from .base import Op


class Conv2DResidualOp(Op):
    """Args:
        conv: the Conv2DOp (its activation must be None: the add comes first).
        activation: the activation after the add (None or one of the fusable ones).
    """

    arity = None

    def __init__(self, conv, activation=None):
        if conv.activation not in (None, "linear"):
            raise ValueError(f"Conv2D '{conv.name}': a residual add can only be fused into a "
                             f"convolution without activation, got {conv.activation!r}")
        self.conv = conv
        self.activation = activation
        self.name = conv.name

    def output_dims(self, input_dims):
        conv_dims, residual_dims = input_dims
        output = self.conv.output_dims(conv_dims)
        if tuple(residual_dims) != tuple(output):
            raise ValueError(f"Conv2D '{self.name}': the residual added to its output has dims "
                             f"{tuple(residual_dims)}, expected {tuple(output)}")
        return output

    def parameter_dims(self, input_dims):
        return self.conv.parameter_dims(input_dims[0])

    def forward(self, builder, xs, need_input_grad=None):
        x, residual = xs
        self.output_dims([x.dims, residual.dims])
        output, _ = self.conv.plan(builder, x, False, self.activation, residual)

        def backward(output_grad):
            raise RuntimeError(f"Conv2D '{self.name}': a fused residual add has no backward "
                               "(inference plans only)")

        return output, backward
