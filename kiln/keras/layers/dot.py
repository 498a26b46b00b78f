"""Dot layer (`keras.layers.Dot`, `keras.layers.dot`): the per-sample dot product of two
tensors along `axes`, as Keras 3's batch_dot, optionally of L2-normalized inputs (cosine
proximity).

Planned forms: two (batch, features) vectors (a product and a sum: (batch, 1)), and two
sequences (batch, steps, features) contracted over one axis each (a batched matmul, with
reorders when the contracted axis is not where the matmul reads it).
"""

from ...graph.symbolic import SymbolicTensor
from .. import ops
from .base_layer import Layer

EPSILON = 1e-7  # Keras's backend epsilon, the floor of normalize()'s norm


def l2_normalize(x, axis):
    """Keras's normalize(x, axis): x * min(rsqrt(sum(x², axis)), 1 / epsilon)."""
    square_sum = ops.sum(ops.square(x), axis=axis, keepdims=True)
    return ops.multiply(x, ops.minimum(ops.rsqrt(square_sum), 1.0 / EPSILON))


class Dot(Layer):
    """Args: axes (an int, or a pair: the axis of each input; not the batch axis), normalize
    (L2-normalize both inputs along their axis first)."""

    def __init__(self, axes, normalize=False, **kwargs):
        super().__init__(**kwargs)
        if isinstance(axes, bool) or not isinstance(axes, (int, list, tuple)):
            raise TypeError(f"{self.context}: argument axes must be an int or a pair of ints, "
                            f"got {axes!r}")
        if isinstance(axes, (list, tuple)) and (
                len(axes) != 2 or not all(isinstance(a, int) for a in axes)):
            raise ValueError(f"{self.context}: argument axes must hold two ints (the axis of "
                             f"each input), got {axes!r}")
        self.axes, self.normalize = axes, bool(normalize)

    def _axes(self, shapes):
        pair = [self.axes] * 2 if isinstance(self.axes, int) else list(self.axes)
        return [axis % len(shape) for axis, shape in zip(pair, shapes, strict=True)]

    def build(self, input_shape):
        if not isinstance(input_shape, (list, tuple)) or len(input_shape) != 2 \
                or not all(isinstance(s, (list, tuple)) for s in input_shape):
            raise ValueError(f"{self.context}: must be called on a list of 2 inputs, got "
                             f"input shape {input_shape}")
        shape1, shape2 = input_shape
        axis1, axis2 = self._axes(input_shape)
        if axis1 == 0 or axis2 == 0:
            raise ValueError(f"{self.context}: argument axes={self.axes!r} must not include "
                             "the batch axis 0")
        if shape1[axis1] != shape2[axis2]:
            raise ValueError(f"{self.context}: incompatible input shapes: axis values "
                             f"{shape1[axis1]} (at axis {axis1}) != {shape2[axis2]} (at axis "
                             f"{axis2}); full input shapes {tuple(shape1)}, {tuple(shape2)}")
        ranks = (len(shape1), len(shape2))
        if ranks not in ((2, 2), (3, 3)):
            raise NotImplementedError(f"{self.context}: inputs of ranks {ranks} are not "
                                      "planned yet; planned: two (batch, features) or two "
                                      "(batch, steps, features) tensors")
        self.built = True

    def call(self, inputs):
        if not isinstance(inputs, (list, tuple)) or len(inputs) != 2 or not all(
                isinstance(t, SymbolicTensor) for t in inputs):
            raise ValueError(f"{self.context}: must be called on a list of 2 tensors, got "
                             f"{inputs!r}")
        x1, x2 = inputs
        axis1, axis2 = self._axes([x1.shape, x2.shape])
        if self.normalize:
            x1, x2 = l2_normalize(x1, axis1), l2_normalize(x2, axis2)
        if len(x1.shape) == 2:
            return ops.sum(ops.multiply(x1, x2), axis=1, keepdims=True)
        s1 = "b" + ("kn" if axis1 == 1 else "nk")
        s2 = "b" + ("km" if axis2 == 1 else "mk")
        return ops.einsum(f"{s1},{s2}->bnm", x1, x2)

    def compute_mask(self, inputs, previous_mask):
        return None

    def compute_output_shape(self, input_shape):
        shape1, shape2 = (list(s) for s in input_shape)
        axis1, axis2 = self._axes(input_shape)
        shape1.pop(axis1)
        shape2.pop(axis2)
        shape2.pop(0)
        output = shape1 + shape2
        return tuple(output + [1] if len(output) == 1 else output)

    def get_config(self):
        return {**super().get_config(), "axes": self.axes, "normalize": self.normalize}


def dot(inputs, axes=-1, **kwargs):
    """`dot([x, y], axes=-1)`: Dot(axes)([x, y])."""
    return Dot(axes=axes, **kwargs)(inputs)


__all__ = ["Dot", "dot"]
