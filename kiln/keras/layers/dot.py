"""Dot (`keras.layers.Dot`, Keras 2's `keras.layers.merge.Dot` / `dot`): the dot product of
two tensors along one axis each, per sample (Keras's `batch_dot`), optionally of the
L2-normalized inputs (cosine similarity).

It is a composition of ops kiln plans already, so forward and backward come from them:
- rank 2, (batch, n) . (batch, n): multiply and a sum over the features, kept as (batch, 1);
- rank 3: the contracted axis of each input moved last (a transpose when it is axis 1), then
  one batched matmul "btd,bsd->bts" (oneDNN matmul, B read transposed);
- normalize: x * min(1 / sqrt(sum(x^2)), 1 / epsilon) along the axis, as Keras 3's
  `ops.normalize`.
Other ranks (and inputs of different ranks) are refused by name.
"""

from .base_layer import Layer


class Dot(Layer):
    """Args:
        axes: int or pair of ints: the axis of each input the product runs over (not the
            batch axis; negative counts from the end).
        normalize: L2-normalize both inputs along those axes first (cosine proximity).
    """

    supports_masking = True

    def __init__(self, axes, normalize=False, **kwargs):
        super().__init__(**kwargs)
        pair = [axes, axes] if isinstance(axes, int) else axes
        if not isinstance(pair, (list, tuple)) or len(pair) != 2 or not all(
                isinstance(a, int) and not isinstance(a, bool) for a in pair):
            raise ValueError(f"{self.context}: argument axes must be an int or a pair of "
                             f"ints, got {axes!r}")
        self.axes, self.normalize = axes, bool(normalize)

    def compute_mask(self, inputs, previous_mask=None):
        return None  # the product's axes are no longer the inputs' steps: no mask

    def _positive_axes(self, shapes):
        pair = [self.axes, self.axes] if isinstance(self.axes, int) else list(self.axes)
        return [a % len(shape) for a, shape in zip(pair, shapes, strict=True)]

    def build(self, input_shape):
        if not isinstance(input_shape, (list, tuple)) or len(input_shape) != 2 or not all(
                isinstance(s, (list, tuple)) for s in input_shape):
            raise ValueError(f"{self.context}: expects a list of 2 inputs, got "
                             f"{input_shape!r}")
        shape1, shape2 = (tuple(s) for s in input_shape)
        if len(shape1) != len(shape2) or len(shape1) not in (2, 3):
            raise NotImplementedError(
                f"{self.context}: inputs of ranks {len(shape1)} and {len(shape2)} are not "
                "supported yet; expected two (batch, n) or two (batch, steps, n) inputs")
        axes = self._positive_axes((shape1, shape2))
        if 0 in axes:
            raise ValueError(f"{self.context}: argument axes must not name the batch axis, "
                             f"got {self.axes!r}")
        if shape1[axes[0]] != shape2[axes[1]]:
            raise ValueError(f"{self.context}: incompatible input shapes: axis values "
                             f"{shape1[axes[0]]} (at axis {axes[0]}) != {shape2[axes[1]]} "
                             f"(at axis {axes[1]}); full input shapes {shape1}, {shape2}")
        self.built = True

    def _normalized(self, x, axis):
        from .. import backend
        from .. import ops as kops  # (keras.ops imports the layers package: not at the top)

        square_sum = kops.sum(kops.square(x), axis=axis, keepdims=True)
        inverse_norm = kops.minimum(kops.divide(1.0, kops.sqrt(square_sum)),
                                    1.0 / backend.epsilon())
        return kops.multiply(x, inverse_norm)

    def call(self, inputs):
        from .. import ops as kops

        x1, x2 = inputs
        axes = self._positive_axes((x1.shape, x2.shape))
        if self.normalize:
            x1, x2 = self._normalized(x1, axes[0]), self._normalized(x2, axes[1])
        if len(x1.shape) == 2:
            return kops.sum(kops.multiply(x1, x2), axis=1, keepdims=True)
        if axes[0] == 1:
            x1 = kops.transpose(x1, (0, 2, 1))
        if axes[1] == 1:
            x2 = kops.transpose(x2, (0, 2, 1))
        return kops.einsum("btd,bsd->bts", x1, x2)

    def get_config(self):
        return {**super().get_config(), "axes": self.axes, "normalize": self.normalize}


def dot(inputs, axes=-1, **kwargs):
    """Functional form of `Dot`: `dot([x1, x2], axes)`."""
    return Dot(axes=axes, **kwargs)(inputs)


__all__ = ["Dot", "dot"]
