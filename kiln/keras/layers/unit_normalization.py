"""UnitNormalization layer (`keras.layers.UnitNormalization`): each sample scaled to an L2 norm
of 1 over `axis`, y = x * min(1 / sqrt(sum(x^2)), 1e12) as Keras 3, as a fused numba kernel
(kiln/ops/axis_normalization.py)."""

from ...graph.symbolic import apply
from ...ops import axis_normalization_kernels as kernels
from ...ops.axis_normalization import AxisNormalizationOp, layer_view
from .arguments import axis_argument, positive_axes
from .base_layer import Layer

EPSILON = 1e-12  # Keras's: the inverse norm is at most 1 / EPSILON


class UnitNormalization(Layer):
    """Args: axis (-1; an int or a list of consecutive axes, not the batch axis). No weights.
    """

    supports_masking = True  # the output carries the input's mask, as Keras

    def __init__(self, axis=-1, **kwargs):
        super().__init__(**kwargs)
        self.axis = axis_argument(axis, self.context)
        self.op = None

    def build(self, input_shape):
        tensor = self._input_tensor
        axes = positive_axes(self.axis, input_shape, self.context)
        self.op = AxisNormalizationOp(
            self.name, "UnitNormalization", lambda shape: layer_view(shape, axes, self.context),
            kernels.UNIT, EPSILON, data_format=tensor.data_format, flattened=tensor.flattened)
        self.op.output_dims(tensor.dims)  # axes that are not consecutive fail here

    def call(self, inputs):
        return apply(self.op, inputs)

    def get_config(self):
        return {**super().get_config(), "axis": self.axis}
