"""DepthwiseConv2D layer (`keras.layers.DepthwiseConv2D`).

A depthwise convolution is a grouped one with one input channel per group: the same Conv2DOp
with groups = channels, which oneDNN runs with its depthwise kernels, bias and activation fused
as for Conv2D (and a following BatchNormalization folded into it in inference plans).
"""

from ... import ops
from .. import activations, backend, initializers
from .base_layer import Layer, check_choice
from .conv2d import channels_of, fused_activation, positive_int, positive_pair


class DepthwiseConv2D(Layer):
    """Each input channel convolved with its own `depth_multiplier` filters.

    Args:
        kernel_size, strides, padding ('valid' / 'same'), data_format, dilation_rate: as
            Conv2D.
        depth_multiplier: filters per input channel; output channel c * m + k comes from input
            channel c (the kernel is (kh, kw, channels, depth_multiplier), named 'kernel' as in
            Keras 3; Keras 2 named it 'depthwise_kernel').
        activation, use_bias, depthwise_initializer, bias_initializer, depthwise_regularizer,
        bias_regularizer, activity_regularizer, depthwise_constraint, bias_constraint: as in
            Keras.

    Example:
        >>> x = DepthwiseConv2D(3, padding="same", use_bias=False)(Input((32, 32, 16)))
    """

    def __init__(self, kernel_size, strides=(1, 1), padding="valid", depth_multiplier=1,
                 data_format=None, dilation_rate=(1, 1), activation=None, use_bias=True,
                 depthwise_initializer="glorot_uniform", bias_initializer="zeros",
                 depthwise_regularizer=None, bias_regularizer=None, depthwise_constraint=None,
                 bias_constraint=None, **kwargs):
        # Keras 2 configs carry Conv2D's groups (always 1 here)
        groups = kwargs.pop("groups", 1)
        super().__init__(**kwargs)
        if groups != 1:
            raise ValueError(f"{self.context}: argument groups must be 1 (a Keras 2 config key "
                             f"{type(self).__name__} has no use for), got {groups!r}")
        # the kernel's regularizer and constraint are planned as any layer's kernel ones
        self.set_weight_regularization(depthwise_regularizer, bias_regularizer,
                                       depthwise_constraint, bias_constraint)
        self.kernel_size = positive_pair(kernel_size, self.context, "kernel_size")
        self.strides = positive_pair(strides, self.context, "strides")
        self.padding = check_choice(padding, ("valid", "same"), self.context, "padding")
        self.depth_multiplier = positive_int(depth_multiplier, self.context, "depth_multiplier")
        self.data_format = backend.normalize_data_format(data_format, self.context)
        self.dilation_rate = positive_pair(dilation_rate, self.context, "dilation_rate")
        self.activation, self.activation_function = activations.resolve(activation, self.context)
        self.use_bias = use_bias
        self.kernel_initializer = initializers.get(
            depthwise_initializer, self.context, "depthwise_initializer")
        self.bias_initializer = initializers.get(
            bias_initializer, self.context, "bias_initializer")
        self.op = None  # made in build(), once the channels are known

    def build(self, input_shape):
        if len(input_shape) != 4:
            raise ValueError(f"{self.context}: expected a 4D input (batch, height, width, "
                             f"channels) or (batch, channels, height, width), got shape "
                             f"{input_shape}")
        channels = channels_of(input_shape, self.data_format, self.context)
        self.op = ops.Conv2DOp(self.name, channels * self.depth_multiplier, self.kernel_size,
                               self.strides, self.padding, fused_activation(self), self.use_bias,
                               self.dilation_rate, groups=channels)
        dims = self.op.parameter_dims(self._input_tensor.dims)
        self.kernel = self.add_weight("kernel", (*self.kernel_size, channels,
                                                 self.depth_multiplier),
                                      self.kernel_initializer, *dims["kernel"],
                                      regularizer=self.kernel_regularizer,
                                      constraint=self.kernel_constraint)
        if self.use_bias:
            self.bias = self.add_weight("bias", (channels * self.depth_multiplier,),
                                        self.bias_initializer, *dims["bias"],
                                        regularizer=self.bias_regularizer,
                                        constraint=self.bias_constraint)

    def call(self, inputs):
        return self.apply_with_activation(self.op, inputs)

    def get_config(self):
        base = super().get_config()
        weights = {key.replace("kernel", "depthwise"): value
                   for key, value in self.weight_regularization_config().items()}
        return {**base, "depth_multiplier": self.depth_multiplier,
                "kernel_size": self.kernel_size, "strides": self.strides,
                "padding": self.padding, "data_format": self.data_format,
                "dilation_rate": self.dilation_rate, "activation": self.activation_config(),
                "use_bias": self.use_bias,
                "activity_regularizer": base.get("activity_regularizer"), **weights}
