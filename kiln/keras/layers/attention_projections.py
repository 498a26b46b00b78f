"""What MultiHeadAttention and GroupedQueryAttention share: EinsumDense projections built as
Keras builds them, the sublayer names Keras reserves, and the attention dropout."""

from ...ops.dropout import DropoutOp
from .. import initializers, regularizers
from .base_layer import Layer, is_integer, unique_name
from .einsum_dense import EinsumDense


def positive_int(value, optional=False):
    return (optional and value is None) or (is_integer(value) and not isinstance(value, bool)
                                            and value > 0)


def fresh(initializer):
    """A new instance from the initializer's config (Keras's `cls.from_config(get_config())`);
    a plain function as it is."""
    if isinstance(initializer, initializers.Initializer):
        return type(initializer).from_config(initializer.get_config())
    return initializer


class _AttentionProjections(Layer):  # not exported: a base, no layer of its own
    """Base of the attention layers: `_set_projection_options` in __init__, `_projection`
    and `_reserve_sublayers` in build()."""

    def _set_projection_options(self, kernel_initializer, bias_initializer, kernel_regularizer,
                                bias_regularizer, activity_regularizer, kernel_constraint,
                                bias_constraint):
        self.kernel_initializer = initializers.get(kernel_initializer, self.context,
                                                   "kernel_initializer")
        self.bias_initializer = initializers.get(bias_initializer, self.context,
                                                 "bias_initializer")
        self.set_weight_regularization(kernel_regularizer, bias_regularizer, kernel_constraint,
                                       bias_constraint)
        self._activity = regularizers.get(activity_regularizer, self.context,
                                          "activity_regularizer")
        self._returns_scores = False
        self._dropout_op = None

    def _projection(self, equation, output_shape, bias_axes, name, activation=None):
        # a fresh copy of each initializer, as Keras: an unseeded instance draws the same
        # values on every call, and query, key and value would start equal
        layer = EinsumDense(equation, output_shape, activation=activation,
                            bias_axes=bias_axes if self.use_bias else None,
                            kernel_initializer=fresh(self.kernel_initializer),
                            bias_initializer=fresh(self.bias_initializer),
                            kernel_regularizer=self.kernel_regularizer,
                            bias_regularizer=self.bias_regularizer,
                            kernel_constraint=self.kernel_constraint,
                            bias_constraint=self.bias_constraint,
                            activity_regularizer=self._activity, name=name)
        layer.nest_in(self.name)
        return layer

    def _reserve_sublayers(self):
        """Keras builds a Softmax and a Dropout sublayer, whatever the rate, and they take the
        automatic names "softmax" and "dropout": a Dropout made after the first attention
        layer is named "dropout_1" in Keras, and must be here too. The dropout itself is an
        op of the attention probabilities."""
        unique_name("Softmax")
        unique_name("Dropout")
        if self.dropout > 0:
            seed = self.seed
            if seed is None:
                seed = int(initializers._generator[0].integers(0, 2**62))
            self._dropout_op = DropoutOp(f"{self.name}/dropout", self.dropout, seed)

    def projection_config(self):
        """The regularization and activity entries of get_config()."""
        return {**self.weight_regularization_config(),
                "activity_regularizer": None if self._activity is None
                else regularizers.serialize(self._activity)}
