"""Conv2D layer (`keras.layers.Conv2D`)."""

from ... import ops
from .. import activations, backend, initializers
from .base_layer import Layer, check_choice, is_integer, pair


class Conv2D(Layer):
    """2D convolution; bias and activation run fused inside the oneDNN primitive.

    Args:
        filters: number of output channels.
        kernel_size: int or pair.
        strides: int or pair.
        padding: 'valid' or 'same'.
        data_format: 'channels_last' (default from keras.json) or 'channels_first'; only the
            order of the user's axes, never the speed.
        dilation_rate: only 1 is supported.
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
        if not is_integer(filters) or filters <= 0:
            raise ValueError(f"{self.context}: argument filters must be a positive int, "
                             f"got {filters!r}")
        self.filters = int(filters)
        self.kernel_size = pair(kernel_size, self.context, "kernel_size")
        self.strides = pair(strides, self.context, "strides")
        self.padding = check_choice(padding, ("valid", "same"), self.context, "padding")
        self.data_format = backend.normalize_data_format(data_format, self.context)
        if pair(dilation_rate, self.context, "dilation_rate") != (1, 1):
            raise ValueError(f"{self.context}: argument dilation_rate must be 1 (dilated "
                             f"convolutions are not supported yet), got {dilation_rate!r}")
        if groups != 1:
            raise ValueError(f"{self.context}: argument groups must be 1 (grouped convolutions "
                             f"are not supported yet), got {groups!r}")
        self.activation = activations.get_name(activation, self.context)
        self.use_bias = use_bias
        self.kernel_initializer = initializers.get(
            kernel_initializer, self.context, "kernel_initializer")
        self.bias_initializer = initializers.get(
            bias_initializer, self.context, "bias_initializer")
        fused = self.activation if self.activation in ops.FUSABLE else None
        self.op = ops.Conv2D(self.name, filters, self.kernel_size, self.strides, self.padding,
                             fused, use_bias)

    def build(self, input_shape):
        if len(input_shape) != 4:
            raise ValueError(f"{self.context}: expected a 4D input (batch, height, width, "
                             f"channels) or (batch, channels, height, width), got shape "
                             f"{input_shape}")
        dims = self.op.parameter_dims(self._input_tensor.dims)
        channels = self._input_tensor.dims[1]
        kh, kw = self.kernel_size
        self.add_kernel_and_bias((kh, kw, channels, self.filters), dims)

    def call(self, inputs):
        return self.apply_with_activation(self.op, inputs)

    def get_config(self):
        base = super().get_config()
        return {**base, "filters": self.filters,
                "kernel_size": self.kernel_size, "strides": self.strides,
                "padding": self.padding, "data_format": self.data_format,
                "dilation_rate": (1, 1), "groups": 1,
                "activation": self.activation, "use_bias": self.use_bias,
                # Keras's convolutions always write the key, None when unset
                "activity_regularizer": base.get("activity_regularizer"),
                **self.weight_regularization_config()}
