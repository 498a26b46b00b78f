"""RescalingOp: y = x * scale + offset, as oneDNN eltwise linear (alpha = scale, beta = offset)
in the input's layout; backward is eltwise linear's backward (dx = scale * dy). It is the
UnaryOp's `linear` function under the Keras layer's argument names."""

from .unary import UnaryOp


class RescalingOp(UnaryOp):
    """Args: name, scale, offset (floats)."""

    def __init__(self, name, scale, offset=0.0):
        super().__init__(name, "linear", scale, offset)
        self.scale, self.offset = self.alpha, self.beta
