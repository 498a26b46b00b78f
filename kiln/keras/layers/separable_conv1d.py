"""SeparableConv1D layer (`keras.layers.SeparableConv1D`): a depthwise convolution over the
steps, then a pointwise (kernel 1) one.

Two Conv1DOp ops (2D convolutions of height 1): the depthwise one (groups = channels, no bias)
and the pointwise one, which carries the bias and the activation as its post-ops. Their kernels
are the layer's 'depthwise_kernel' and 'pointwise_kernel', as in Keras.
"""

from ... import ops
from ...graph.symbolic import apply
from .. import activations, backend, constraints, initializers, regularizers
from .base_layer import Layer, check_choice
from .conv1d import single
from .conv2d import channels_of, fused_activation, positive_int
from .sequences import check_sequence, check_steps


class SeparableConv1D(Layer):
    """Args:
        filters: output channels of the pointwise convolution.
        kernel_size, strides, dilation_rate (int or a tuple of one), padding ('valid' /
        'same'), data_format, depth_multiplier: of the depthwise convolution (see
        DepthwiseConv1D).
        activation, use_bias: after the pointwise convolution.
        depthwise_initializer, pointwise_initializer, bias_initializer, and the matching
        *_regularizer and *_constraint arguments, activity_regularizer: as in Keras. The
        kernels are (kernel_size, channels, depth_multiplier) and (1, channels *
        depth_multiplier, filters).

    Example:
        >>> x = SeparableConv1D(32, 5, padding="same", activation="relu")(Input((100, 16)))
    """

    def __init__(self, filters, kernel_size, strides=1, padding="valid", data_format=None,
                 dilation_rate=1, depth_multiplier=1, activation=None, use_bias=True,
                 depthwise_initializer="glorot_uniform", pointwise_initializer="glorot_uniform",
                 bias_initializer="zeros", depthwise_regularizer=None, pointwise_regularizer=None,
                 bias_regularizer=None, depthwise_constraint=None, pointwise_constraint=None,
                 bias_constraint=None, **kwargs):
        super().__init__(**kwargs)
        context = self.context
        self.set_weight_regularization(pointwise_regularizer, bias_regularizer,
                                       pointwise_constraint, bias_constraint)
        self.depthwise_regularizer = regularizers.get(depthwise_regularizer, context,
                                                      "depthwise_regularizer")
        self.depthwise_constraint = constraints.get(depthwise_constraint, context,
                                                    "depthwise_constraint")
        self.filters = positive_int(filters, context, "filters")
        self.kernel_size = single(kernel_size, context, "kernel_size")
        self.strides = single(strides, context, "strides")
        self.padding = check_choice(padding, ("valid", "same"), context, "padding")
        self.data_format = backend.normalize_data_format(data_format, context)
        self.dilation_rate = single(dilation_rate, context, "dilation_rate")
        self.depth_multiplier = positive_int(depth_multiplier, context, "depth_multiplier")
        self.activation, self.activation_function = activations.resolve(activation, context)
        self.use_bias = use_bias
        self.depthwise_initializer = initializers.get(depthwise_initializer, context,
                                                      "depthwise_initializer")
        self.kernel_initializer = initializers.get(pointwise_initializer, context,
                                                   "pointwise_initializer")
        self.bias_initializer = initializers.get(bias_initializer, context, "bias_initializer")
        self.depthwise_op = self.pointwise_op = None  # made in build(): they need the channels

    def build(self, input_shape):
        check_sequence(input_shape, self.context)
        check_steps(self, input_shape, self.kernel_size[0], self.strides[0],
                    self.dilation_rate[0])
        channels = channels_of(input_shape, self.data_format, self.context)
        middle = channels * self.depth_multiplier
        self.depthwise_op = ops.Conv1DOp(
            self.name, middle, self.kernel_size[0], self.strides[0], self.padding, None, False,
            self.dilation_rate[0], groups=channels, data_format=self.data_format,
            kernel_name="depthwise_kernel")
        self.pointwise_op = ops.Conv1DOp(
            self.name, self.filters, 1, 1, "valid", fused_activation(self), self.use_bias,
            data_format=self.data_format, kernel_name="pointwise_kernel")
        dims = self._input_tensor.dims
        depthwise = self.depthwise_op.parameter_dims(dims)["depthwise_kernel"]
        pointwise = self.pointwise_op.parameter_dims(self.depthwise_op.output_dims(dims))
        self.depthwise_kernel = self.add_weight(
            "depthwise_kernel", (self.kernel_size[0], channels, self.depth_multiplier),
            self.depthwise_initializer, *depthwise, regularizer=self.depthwise_regularizer,
            constraint=self.depthwise_constraint)
        self.pointwise_kernel = self.add_weight(
            "pointwise_kernel", (1, middle, self.filters), self.kernel_initializer,
            *pointwise["pointwise_kernel"], regularizer=self.kernel_regularizer,
            constraint=self.kernel_constraint)
        if self.use_bias:
            self.bias = self.add_weight("bias", (self.filters,), self.bias_initializer,
                                        *pointwise["bias"], regularizer=self.bias_regularizer,
                                        constraint=self.bias_constraint)

    def call(self, inputs):
        return self.apply_with_activation(self.pointwise_op, apply(self.depthwise_op, inputs))

    def get_config(self):
        base = super().get_config()
        weights = self.weight_regularization_config()
        return {**base, "depth_multiplier": self.depth_multiplier, "filters": self.filters,
                "kernel_size": self.kernel_size, "strides": self.strides,
                "padding": self.padding, "data_format": self.data_format,
                "dilation_rate": self.dilation_rate, "activation": self.activation_config(),
                "use_bias": self.use_bias,
                "depthwise_initializer": initializers.serialize(self.depthwise_initializer),
                "pointwise_initializer": weights["kernel_initializer"],
                "bias_initializer": weights["bias_initializer"],
                "depthwise_regularizer": None if self.depthwise_regularizer is None
                else regularizers.serialize(self.depthwise_regularizer),
                "pointwise_regularizer": weights["kernel_regularizer"],
                "bias_regularizer": weights["bias_regularizer"],
                "activity_regularizer": base.get("activity_regularizer"),
                "depthwise_constraint": None if self.depthwise_constraint is None
                else constraints.serialize(self.depthwise_constraint),
                "pointwise_constraint": weights["kernel_constraint"],
                "bias_constraint": weights["bias_constraint"]}


SeparableConvolution1D = SeparableConv1D  # Keras's other spelling
__all__ = ["SeparableConv1D", "SeparableConvolution1D"]
