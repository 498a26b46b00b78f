"""Conv1DTranspose layer (`keras.layers.Conv1DTranspose`).

Conv2DTranspose's op (oneDNN's deconvolution primitives, bias and activation fused) on the
sequence seen as an image of height 1 (ops/sequence_as_image.py): kernel (1, k), strides
(1, s), and no padding on the height axis under Keras's rule (output_padding 0 there).
"""

from ... import ops
from ...ops.sequence_as_image import SequenceAsImageOp
from .. import activations, backend, initializers
from .arguments import is_integer
from .base_layer import Layer, check_choice
from .conv1d import single
from .conv2d import channels_of, check_strides_with_dilation, fused_activation, positive_int
from .sequences import check_sequence


class Conv1DTranspose(Layer):
    """The transpose of a Conv1D (its gradient with respect to its input): upsampling of the
    steps by the strides.

    Args:
        filters: output channels.
        kernel_size, strides, dilation_rate: int or a tuple of one (not strides > 1 with
            dilation_rate > 1, as in Keras).
        padding: 'valid' (output (L - 1) * s + max(k, s)) or 'same' (output L * s).
        output_padding: None, or an int (or a tuple of one) below the stride: the output is
            then (L - 1) * s + k - 2 * pad + output_padding, as in Keras.
        data_format, activation, use_bias, kernel_initializer, bias_initializer,
        kernel_regularizer, bias_regularizer, activity_regularizer, kernel_constraint,
        bias_constraint: as Conv1D. The kernel is (kernel_size, filters, input channels).

    Example:
        >>> x = Conv1DTranspose(16, 2, strides=2)(Input((50, 32)))  # -> (None, 100, 16)
    """

    def __init__(self, filters, kernel_size, strides=1, padding="valid", output_padding=None,
                 data_format=None, dilation_rate=1, activation=None, use_bias=True,
                 kernel_initializer="glorot_uniform", bias_initializer="zeros",
                 kernel_regularizer=None, bias_regularizer=None, kernel_constraint=None,
                 bias_constraint=None, **kwargs):
        # Keras 2 configs carry Conv1D's groups (always 1 here)
        groups = kwargs.pop("groups", 1)
        super().__init__(**kwargs)
        context = self.context
        if groups != 1:
            raise ValueError(f"{context}: argument groups must be 1 (a Keras 2 config key "
                             f"{type(self).__name__} has no use for), got {groups!r}")
        self.set_weight_regularization(kernel_regularizer, bias_regularizer, kernel_constraint,
                                       bias_constraint)
        self.filters = positive_int(filters, context, "filters")
        self.kernel_size = single(kernel_size, context, "kernel_size")
        self.strides = single(strides, context, "strides")
        self.padding = check_choice(padding, ("valid", "same"), context, "padding")
        self.output_padding = None
        if output_padding is not None:
            value = (output_padding,) if is_integer(output_padding) else output_padding
            if (not isinstance(value, (list, tuple)) or len(value) != 1
                    or not is_integer(value[0]) or not 0 <= value[0] < self.strides[0]):
                raise ValueError(f"{context}: argument output_padding must be None or an int "
                                 f">= 0 below strides={self.strides[0]} (or a tuple of one), "
                                 f"got {output_padding!r}")
            self.output_padding = (int(value[0]),)
        self.data_format = backend.normalize_data_format(data_format, context)
        self.dilation_rate = single(dilation_rate, context, "dilation_rate")
        check_strides_with_dilation(self.strides, self.dilation_rate, context)
        self.activation, self.activation_function = activations.resolve(activation, context)
        self.use_bias = use_bias
        self.kernel_initializer = initializers.get(kernel_initializer, context,
                                                   "kernel_initializer")
        self.bias_initializer = initializers.get(bias_initializer, context, "bias_initializer")
        image_output_padding = None if self.output_padding is None else (0, *self.output_padding)
        self.op = SequenceAsImageOp(
            ops.Conv2DTransposeOp(self.name, self.filters, (1, *self.kernel_size),
                                  (1, *self.strides), self.padding, image_output_padding,
                                  fused_activation(self), use_bias, (1, *self.dilation_rate)),
            self.data_format, "Conv1DTranspose")

    def build(self, input_shape):
        check_sequence(input_shape, self.context)
        channels = channels_of(input_shape, self.data_format, self.context)
        dims = self.op.parameter_dims(self._input_tensor.dims)
        self.kernel = self.add_weight("kernel", (self.kernel_size[0], self.filters, channels),
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


Convolution1DTranspose = Conv1DTranspose  # Keras's other spelling
__all__ = ["Conv1DTranspose", "Convolution1DTranspose"]
