"""DepthwiseConv1D layer (`keras.layers.DepthwiseConv1D`).

A depthwise convolution is a grouped one with one input channel per group: Conv1DOp with
groups = channels (the 2D convolution of height 1, oneDNN's depthwise kernels), bias and
activation fused as for Conv1D.
"""

from ... import ops
from .. import activations, backend, initializers
from .base_layer import Layer, check_choice
from .conv1d import single
from .conv2d import channels_of, fused_activation, positive_int
from .sequences import check_sequence, check_steps


class DepthwiseConv1D(Layer):
    """Each input channel convolved over the steps with its own `depth_multiplier` filters.

    Args:
        kernel_size, strides, dilation_rate: int or a tuple of one.
        padding: 'valid' or 'same'; data_format: as Conv1D.
        depth_multiplier: filters per input channel; output channel c * m + k comes from input
            channel c (the kernel is (kernel_size, channels, depth_multiplier), 'kernel').
        activation, use_bias, depthwise_initializer, bias_initializer, depthwise_regularizer,
        bias_regularizer, activity_regularizer, depthwise_constraint, bias_constraint: as in
            Keras.

    Example:
        >>> x = DepthwiseConv1D(5, padding="same", activation="relu")(Input((100, 16)))
    """

    def __init__(self, kernel_size, strides=1, padding="valid", depth_multiplier=1,
                 data_format=None, dilation_rate=1, activation=None, use_bias=True,
                 depthwise_initializer="glorot_uniform", bias_initializer="zeros",
                 depthwise_regularizer=None, bias_regularizer=None, depthwise_constraint=None,
                 bias_constraint=None, **kwargs):
        # Keras 2 configs carry Conv1D's groups (always 1 here)
        groups = kwargs.pop("groups", 1)
        super().__init__(**kwargs)
        context = self.context
        if groups != 1:
            raise ValueError(f"{context}: argument groups must be 1 (a Keras 2 config key "
                             f"{type(self).__name__} has no use for), got {groups!r}")
        # the kernel's regularizer and constraint are planned as any layer's kernel ones
        self.set_weight_regularization(depthwise_regularizer, bias_regularizer,
                                       depthwise_constraint, bias_constraint)
        self.kernel_size = single(kernel_size, context, "kernel_size")
        self.strides = single(strides, context, "strides")
        self.padding = check_choice(padding, ("valid", "same"), context, "padding")
        self.depth_multiplier = positive_int(depth_multiplier, context, "depth_multiplier")
        self.data_format = backend.normalize_data_format(data_format, context)
        self.dilation_rate = single(dilation_rate, context, "dilation_rate")
        self.activation, self.activation_function = activations.resolve(activation, context)
        self.use_bias = use_bias
        self.kernel_initializer = initializers.get(depthwise_initializer, context,
                                                   "depthwise_initializer")
        self.bias_initializer = initializers.get(bias_initializer, context, "bias_initializer")
        self.op = None  # made in build(), once the channels are known

    def build(self, input_shape):
        check_sequence(input_shape, self.context)
        check_steps(self, input_shape, self.kernel_size[0], self.strides[0],
                    self.dilation_rate[0])
        channels = channels_of(input_shape, self.data_format, self.context)
        self.op = ops.Conv1DOp(self.name, channels * self.depth_multiplier, self.kernel_size[0],
                               self.strides[0], self.padding, fused_activation(self),
                               self.use_bias, self.dilation_rate[0], groups=channels,
                               data_format=self.data_format)
        dims = self.op.parameter_dims(self._input_tensor.dims)
        self.kernel = self.add_weight("kernel", (self.kernel_size[0], channels,
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
