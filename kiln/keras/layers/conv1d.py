"""Conv1D layer (`keras.layers.Conv1D`, Keras 2's Convolution1D).

Keras's (batch, steps, channels) / (batch, channels, steps) tensors run as a 2D convolution of
height 1 (see ops/conv1d.py): the same oneDNN primitives as Conv2D, bias and activation fused.
"""

from ... import ops
from .. import activations, backend, initializers
from .arguments import is_integer
from .base_layer import Layer, check_choice
from .conv2d import channels_of, check_groups, check_strides_with_dilation, positive_int
from .sequences import check_sequence, check_steps


def single(value, context, argument):
    """Keras accepts an int or a tuple of one int: (value,), positive."""
    if is_integer(value):
        value = (value,)
    try:
        (number,) = value
    except (TypeError, ValueError):
        number = None
    if not is_integer(number) or number <= 0:
        raise ValueError(f"{context}: argument {argument} must be a positive int or a tuple "
                         f"of one, got {value!r}")
    return (int(number),)


class Conv1D(Layer):
    """1D convolution over steps.

    Args:
        filters, activation, use_bias, groups, initializers, regularizers, constraints: as
            Conv2D; the kernel is (kernel_size, channels / groups, filters).
        kernel_size, strides, dilation_rate: int or a tuple of one (not strides > 1 with
            dilation_rate > 1, as in Keras).
        padding: 'valid', 'same' or 'causal' (output step t sees only inputs up to t).
        data_format: 'channels_last' (batch, steps, channels) or 'channels_first' (batch,
            channels, steps); the default is image_data_format(), as in Keras.

    Example:
        >>> y = Conv1D(8, 3, padding="causal", activation="relu")(Input((100, 4)))
    """

    def __init__(self, filters, kernel_size, strides=1, padding="valid", data_format=None,
                 dilation_rate=1, groups=1, activation=None, use_bias=True,
                 kernel_initializer="glorot_uniform", bias_initializer="zeros",
                 kernel_regularizer=None, bias_regularizer=None, kernel_constraint=None,
                 bias_constraint=None, **kwargs):
        super().__init__(**kwargs)
        context = self.context
        self.set_weight_regularization(kernel_regularizer, bias_regularizer, kernel_constraint,
                                       bias_constraint)
        self.filters = positive_int(filters, context, "filters")
        self.kernel_size = single(kernel_size, context, "kernel_size")
        self.strides = single(strides, context, "strides")
        self.padding = check_choice(padding, ("valid", "same", "causal"), context, "padding")
        self.data_format = backend.normalize_data_format(data_format, context)
        self.dilation_rate = single(dilation_rate, context, "dilation_rate")
        check_strides_with_dilation(self.strides, self.dilation_rate, context)
        self.groups = positive_int(groups, context, "groups")
        if self.filters % self.groups:
            raise ValueError(f"{context}: argument filters={self.filters} must be divisible by "
                             f"argument groups={self.groups}")
        self.activation, self.activation_function = activations.resolve(activation, context)
        self.use_bias = use_bias
        self.kernel_initializer = initializers.get(kernel_initializer, context,
                                                   "kernel_initializer")
        self.bias_initializer = initializers.get(bias_initializer, context, "bias_initializer")
        fused = self.activation if self.activation in ops.FUSABLE else None
        self.op = ops.Conv1DOp(self.name, self.filters, self.kernel_size[0], self.strides[0],
                               self.padding, fused, use_bias, self.dilation_rate[0], self.groups,
                               self.data_format)

    def build(self, input_shape):
        check_sequence(input_shape, self.context)
        check_steps(self, input_shape, self.kernel_size[0], self.strides[0],
                    self.dilation_rate[0])
        channels = channels_of(input_shape, self.data_format, self.context)
        check_groups(self.groups, channels, self.context)
        dims = self.op.parameter_dims(self._input_tensor.dims)
        self.add_kernel_and_bias((self.kernel_size[0], channels // self.groups, self.filters),
                                 dims)

    def call(self, inputs):
        return self.apply_with_activation(self.op, inputs)

    def get_config(self):
        base = super().get_config()
        return {**base, "filters": self.filters, "kernel_size": self.kernel_size,
                "strides": self.strides, "padding": self.padding,
                "data_format": self.data_format, "dilation_rate": self.dilation_rate,
                "groups": self.groups, "activation": self.activation_config(),
                "use_bias": self.use_bias,
                "activity_regularizer": base.get("activity_regularizer"),
                **self.weight_regularization_config()}


Convolution1D = Conv1D  # Keras's other spelling
__all__ = ["Conv1D", "Convolution1D"]
