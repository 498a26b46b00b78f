"""Conv2D layer (`keras.layers.Conv2D`), and the argument checks the other convolution layers
(DepthwiseConv2D, SeparableConv2D, Conv2DTranspose, Conv1D) share with it."""

from ... import ops
from .. import activations, backend, initializers
from .base_layer import Layer, check_choice, is_integer, pair


def positive_int(value, context, argument):
    if not is_integer(value) or value <= 0:
        raise ValueError(f"{context}: argument {argument} must be a positive int, "
                         f"got {value!r}")
    return int(value)


def positive_pair(value, context, argument):
    """An int or pair of ints, none of them 0 or negative (Keras refuses 0)."""
    values = pair(value, context, argument)
    if min(values) <= 0:
        raise ValueError(f"{context}: argument {argument} must hold positive ints, "
                         f"got {value!r}")
    return values


def check_strides_with_dilation(strides, dilation_rate, context):
    """Keras refuses strides > 1 together with dilation_rate > 1 in Conv1D / Conv2D /
    Conv2DTranspose."""
    if max(strides) > 1 and max(dilation_rate) > 1:
        raise ValueError(f"{context}: strides > 1 is not supported together with "
                         f"dilation_rate > 1 (as in Keras), got strides={strides} and "
                         f"dilation_rate={dilation_rate}")


def channels_of(input_shape, data_format, context):
    channels = input_shape[-1] if data_format == "channels_last" else input_shape[1]
    if channels is None:
        raise ValueError(f"{context}: the channel axis of the input must be known, got shape "
                         f"{tuple(input_shape)}")
    return int(channels)


def check_groups(groups, channels, context):
    if channels % groups:
        raise ValueError(f"{context}: the input's {channels} channels must be divisible by "
                         f"argument groups={groups}")


def fused_activation(layer):
    """The activation the op runs as a post-op (the layer applies any other one after)."""
    return layer.activation if layer.activation in ops.FUSABLE else None


class Conv2D(Layer):
    """2D convolution; bias and activation run fused inside the oneDNN primitive.

    Args:
        filters: number of output channels.
        kernel_size: int or pair.
        strides: int or pair.
        padding: 'valid' or 'same'.
        data_format: 'channels_last' (default from keras.json) or 'channels_first'; only the
            order of the user's axes, never the speed.
        dilation_rate: int or pair (not with strides > 1, as in Keras).
        groups: split input and output channels into `groups` convolutions (the kernel is
            (kh, kw, in / groups, filters)).
        activation: name or function (relu, tanh, sigmoid fuse; softmax runs after).
        use_bias, kernel_initializer, bias_initializer, kernel_regularizer,
        bias_regularizer, activity_regularizer, kernel_constraint, bias_constraint: as in
            Keras (penalties and constraints run in the step).

    Example:
        >>> model = Sequential([Conv2D(32, (3, 3), activation="relu", input_shape=(28, 28, 1))])
    """

    def __init__(self, filters, kernel_size, strides=(1, 1), padding="valid", data_format=None,
                 dilation_rate=(1, 1), groups=1, activation=None, use_bias=True,
                 kernel_initializer="glorot_uniform", bias_initializer="zeros",
                 kernel_regularizer=None, bias_regularizer=None, kernel_constraint=None,
                 bias_constraint=None, **kwargs):
        super().__init__(**kwargs)
        self.set_weight_regularization(kernel_regularizer, bias_regularizer, kernel_constraint,
                                       bias_constraint)
        self.filters = positive_int(filters, self.context, "filters")
        self.kernel_size = positive_pair(kernel_size, self.context, "kernel_size")
        self.strides = positive_pair(strides, self.context, "strides")
        self.padding = check_choice(padding, ("valid", "same"), self.context, "padding")
        self.data_format = backend.normalize_data_format(data_format, self.context)
        self.dilation_rate = positive_pair(dilation_rate, self.context, "dilation_rate")
        check_strides_with_dilation(self.strides, self.dilation_rate, self.context)
        self.groups = positive_int(groups, self.context, "groups")
        if self.filters % self.groups:
            raise ValueError(f"{self.context}: argument filters={self.filters} must be "
                             f"divisible by argument groups={self.groups}")
        self.activation, self.activation_function = activations.resolve(activation, self.context)
        self.use_bias = use_bias
        self.kernel_initializer = initializers.get(
            kernel_initializer, self.context, "kernel_initializer")
        self.bias_initializer = initializers.get(
            bias_initializer, self.context, "bias_initializer")
        self.op = ops.Conv2DOp(self.name, filters, self.kernel_size, self.strides, self.padding,
                               fused_activation(self), use_bias, self.dilation_rate, self.groups)

    def build(self, input_shape):
        if len(input_shape) != 4:
            raise ValueError(f"{self.context}: expected a 4D input (batch, height, width, "
                             f"channels) or (batch, channels, height, width), got shape "
                             f"{input_shape}")
        dims = self.op.parameter_dims(self._input_tensor.dims)
        channels = self._input_tensor.dims[1]
        check_groups(self.groups, channels, self.context)
        kh, kw = self.kernel_size
        self.add_kernel_and_bias((kh, kw, channels // self.groups, self.filters), dims)

    def call(self, inputs):
        return self.apply_with_activation(self.op, inputs)

    def get_config(self):
        base = super().get_config()
        return {**base, "filters": self.filters,
                "kernel_size": self.kernel_size, "strides": self.strides,
                "padding": self.padding, "data_format": self.data_format,
                "dilation_rate": self.dilation_rate, "groups": self.groups,
                "activation": self.activation_config(), "use_bias": self.use_bias,
                # Keras's convolutions always write the key, None when unset
                "activity_regularizer": base.get("activity_regularizer"),
                **self.weight_regularization_config()}


Convolution2D = Conv2D  # Keras's other spelling
__all__ = ["Conv2D", "Convolution2D"]
