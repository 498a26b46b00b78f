"""RMSNormalization layer (`keras.layers.RMSNormalization`): y = x * scale / sqrt(mean(x^2) +
epsilon) over `axis`, as a fused numba kernel (oneDNN 3.2 has no RMS normalization; see
kiln/ops/axis_normalization.py)."""

from ...graph.symbolic import apply
from ...ops import axis_normalization_kernels as kernels
from ...ops.axis_normalization import AxisNormalizationOp, layer_view
from .. import initializers
from .arguments import axis_argument, positive_axes
from .base_layer import Layer


class RMSNormalization(Layer):
    """Args (Keras 3 names and defaults): axis (-1; an int or a list of consecutive axes),
    epsilon (1e-6). Its one weight, `scale` (initialized to ones), has the shape of those axes.
    """

    def __init__(self, axis=-1, epsilon=1e-6, **kwargs):
        super().__init__(**kwargs)
        self.axis = axis_argument(axis, self.context)
        if not epsilon >= 0:
            raise ValueError(f"{self.context}: argument epsilon must be a non-negative float, "
                             f"got {epsilon!r}")
        self.epsilon = float(epsilon)
        self.op = None

    def build(self, input_shape):
        tensor = self._input_tensor
        axes = positive_axes(self.axis, input_shape, self.context)
        self.axis = sorted(self.axis) if isinstance(self.axis, list) else [self.axis]
        self.op = AxisNormalizationOp(
            self.name, "RMSNormalization", lambda shape: layer_view(shape, axes, self.context),
            kernels.ROOT_MEAN_SQUARE, self.epsilon, ("scale", None), tensor.data_format,
            tensor.flattened)
        dims = self.op.parameter_dims(tensor.dims)["scale"]
        self.scale = self.add_weight("scale", tuple(input_shape[axis] for axis in self.axis),
                                     initializers.get("ones", self.context, "scale"), *dims)

    def call(self, inputs):
        return apply(self.op, inputs)

    def get_config(self):
        return {**super().get_config(), "axis": self.axis, "epsilon": self.epsilon}
