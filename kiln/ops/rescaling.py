"""Rescaling: y = x * scale + offset, as oneDNN eltwise linear (alpha = scale, beta = offset)
in the input's layout; backward is eltwise linear's backward (dx = scale * dy). It is the
Unary op's `linear` function under the Keras layer's argument names."""

from .unary import Unary


class Rescaling(Unary):
    """Args: name, scale, offset (floats)."""

    def __init__(self, name, scale, offset=0.0):
        super().__init__(name, "linear", scale, offset)
        self.scale, self.offset = self.alpha, self.beta
