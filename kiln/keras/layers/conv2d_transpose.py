"""Conv2DTranspose layer (`keras.layers.Conv2DTranspose`, Keras 2's Convolution2DTranspose).

Planned onto oneDNN's deconvolution primitives (see ops/conv2d_transpose.py), bias and
activation fused as for Conv2D.
"""

from ... import ops
from .. import activations, backend, initializers
from .base_layer import Layer, check_choice, pair
from .conv2d import (
    channels_of,
    check_strides_with_dilation,
    fused_activation,
    positive_int,
    positive_pair,
)


class Conv2DTranspose(Layer):
    """The transpose of a Conv2D (its gradient with respect to its input): upsampling by the
    strides.

    Args:
        filters: output channels.
        kernel_size, strides: int or pair.
        padding: 'valid' (output (L - 1) * s + max(k, s)) or 'same' (output L * s).
        output_padding: None or an int or pair, each below the stride: the output is then
            (L - 1) * s + k - 2 * pad + output_padding, as in Keras.
        data_format, dilation_rate (not with strides > 1, as in Keras), activation, use_bias,
        kernel_initializer, bias_initializer, kernel_regularizer, bias_regularizer,
        activity_regularizer, kernel_constraint, bias_constraint: as Conv2D. The kernel is
            (kh, kw, filters, input channels), as in Keras.

    Example:
        >>> x = Conv2DTranspose(16, 2, strides=2)(Input((16, 16, 32)))  # -> (None, 32, 32, 16)
    """

    def __init__(self, filters, kernel_size, strides=(1, 1), padding="valid", output_padding=None,
                 data_format=None, dilation_rate=(1, 1), activation=None, use_bias=True,
                 kernel_initializer="glorot_uniform", bias_initializer="zeros",
                 kernel_regularizer=None, bias_regularizer=None, kernel_constraint=None,
                 bias_constraint=None, **kwargs):
        # Keras 2 configs carry Conv2D's groups (always 1 here)
        groups = kwargs.pop("groups", 1)
        super().__init__(**kwargs)
        if groups != 1:
            raise ValueError(f"{self.context}: argument groups must be 1 (a Keras 2 config key "
                             f"{type(self).__name__} has no use for), got {groups!r}")
        context = self.context
        self.set_weight_regularization(kernel_regularizer, bias_regularizer, kernel_constraint,
                                       bias_constraint)
        self.filters = positive_int(filters, context, "filters")
        self.kernel_size = positive_pair(kernel_size, context, "kernel_size")
        self.strides = positive_pair(strides, context, "strides")
        self.padding = check_choice(padding, ("valid", "same"), context, "padding")
        self.output_padding = None
        if output_padding is not None:
            self.output_padding = pair(output_padding, context, "output_padding")
            for axis, (extra, stride) in enumerate(zip(self.output_padding, self.strides,
                                                       strict=True)):
                if not 0 <= extra < stride:
                    raise ValueError(f"{context}: argument output_padding must be >= 0 and "
                                     f"below strides on every axis, got output_padding="
                                     f"{output_padding!r} and strides={self.strides} "
                                     f"(axis {axis})")
        self.data_format = backend.normalize_data_format(data_format, context)
        self.dilation_rate = positive_pair(dilation_rate, context, "dilation_rate")
        check_strides_with_dilation(self.strides, self.dilation_rate, context)
        self.activation, self.activation_function = activations.resolve(activation, context)
        self.use_bias = use_bias
        self.kernel_initializer = initializers.get(kernel_initializer, context,
                                                   "kernel_initializer")
        self.bias_initializer = initializers.get(bias_initializer, context, "bias_initializer")
        self.op = ops.Conv2DTransposeOp(self.name, self.filters, self.kernel_size, self.strides,
                                        self.padding, self.output_padding, fused_activation(self),
                                        use_bias, self.dilation_rate)

    def build(self, input_shape):
        if len(input_shape) != 4:
            raise ValueError(f"{self.context}: expected a 4D input (batch, height, width, "
                             f"channels) or (batch, channels, height, width), got shape "
                             f"{input_shape}")
        channels = channels_of(input_shape, self.data_format, self.context)
        dims = self.op.parameter_dims(self._input_tensor.dims)
        self.kernel = self.add_weight("kernel", (*self.kernel_size, self.filters, channels),
                                      self.kernel_initializer, *dims["kernel"],
                                      regularizer=self.kernel_regularizer,
                                      constraint=self.kernel_constraint)
        if self.use_bias:
            self.bias = self.add_weight("bias", (self.filters,), self.bias_initializer,
                                        *dims["bias"], regularizer=self.bias_regularizer,
                                        constraint=self.bias_constraint)

    def call(self, inputs):
        return self.apply_with_activation(self.op, inputs)

    def get_config(self):
        base = super().get_config()
        return {**base, "filters": self.filters, "kernel_size": self.kernel_size,
                "strides": self.strides, "padding": self.padding,
                "output_padding": self.output_padding, "data_format": self.data_format,
                "dilation_rate": self.dilation_rate, "activation": self.activation_config(),
                "use_bias": self.use_bias,
                "activity_regularizer": base.get("activity_regularizer"),
                **self.weight_regularization_config()}


Convolution2DTranspose = Conv2DTranspose  # Keras's other spelling
__all__ = ["Conv2DTranspose", "Convolution2DTranspose"]
