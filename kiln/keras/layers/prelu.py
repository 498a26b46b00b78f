"""PReLU layer (`keras.layers.PReLU`): a leaky relu whose slope `alpha` is learned."""

from ...graph.symbolic import apply
from ...ops.prelu import PReLUOp
from .. import constraints, initializers, regularizers
from .arguments import is_integer
from .base_layer import Layer, unique_name


class PReLU(Layer):
    """f(x) = x for x >= 0, alpha * x otherwise; alpha has the input's shape without the batch,
    1 along `shared_axes` (e.g. [1, 2] for one alpha per channel of a channels_last image).

    Args: alpha_initializer (default "Zeros"), alpha_regularizer, alpha_constraint,
    shared_axes (an int or a list of Keras axes, not the batch axis 0).
    """

    supports_masking = True  # the output carries the input's mask, as Keras

    def __init__(self, alpha_initializer="Zeros", alpha_regularizer=None, alpha_constraint=None,
                 shared_axes=None, name=None, **kwargs):
        super().__init__(name=name or unique_name("p_re_lu"), **kwargs)
        self.alpha_initializer = initializers.get(alpha_initializer, self.context,
                                                  "alpha_initializer")
        self.alpha_regularizer = regularizers.get(alpha_regularizer, self.context,
                                                  "alpha_regularizer")
        self.alpha_constraint = constraints.get(alpha_constraint, self.context,
                                                "alpha_constraint")
        if shared_axes is None:
            self.shared_axes = None
        else:
            axes = list(shared_axes) if isinstance(shared_axes, (list, tuple)) else [shared_axes]
            if not all(is_integer(axis) and axis >= 1 for axis in axes):
                raise ValueError(f"{self.context}: argument shared_axes must be None, an int or "
                                 f"a list of ints >= 1 (axes after the batch), got "
                                 f"{shared_axes!r}")
            self.shared_axes = [int(axis) for axis in axes]
        self.op = PReLUOp(self.name, self.shared_axes or ())

    def build(self, input_shape):
        rank = len(input_shape)
        if any(axis >= rank for axis in self.op.shared_axes):
            raise ValueError(f"{self.context}: argument shared_axes must name axes of the input "
                             f"(1 to {rank - 1} for shape {input_shape}), got {self.shared_axes}")
        x = self._input_tensor
        (dims, tag), = self.op.parameter_dims(x.dims, x.data_format).values()
        self.alpha = self.add_weight("alpha", self.op.alpha_shape(x.dims, x.data_format),
                                     self.alpha_initializer, dims, tag,
                                     regularizer=self.alpha_regularizer,
                                     constraint=self.alpha_constraint)

    def call(self, inputs):
        return apply(self.op, inputs)

    def get_config(self):
        return {**super().get_config(),
                "alpha_initializer": initializers.serialize(self.alpha_initializer),
                "alpha_regularizer": None if self.alpha_regularizer is None
                else regularizers.serialize(self.alpha_regularizer),
                "alpha_constraint": None if self.alpha_constraint is None
                else constraints.serialize(self.alpha_constraint),
                "shared_axes": self.shared_axes}
