"""What the 1D layers share: the check of their (batch, steps, channels) input, and the length
of its steps axis in either data format, and their arguments."""

from ...ops.conv2d import conv_output_length, dilated_kernel
from .arguments import is_integer


def check_sequence(input_shape, context):
    """A 1D layer reads a 3D tensor."""
    if len(input_shape) != 3:
        raise ValueError(f"{context}: expected a 3D input (batch, steps, channels) or (batch, "
                         f"channels, steps), got shape {tuple(input_shape)}")


def steps_of(input_shape, data_format):
    """The length of the steps axis: the second for channels_last, the last otherwise."""
    return input_shape[1] if data_format == "channels_last" else input_shape[2]


def left_and_right(value, context, argument):
    """Keras's int or (left, right) steps to add or remove, each an int >= 0."""
    if is_integer(value):
        value = (value, value)
    if not (isinstance(value, (list, tuple)) and len(value) == 2
            and all(is_integer(v) for v in value)):
        raise ValueError(f"{context}: argument {argument} must be an int or a pair of ints "
                         f"(left, right), got {value!r}")
    if min(value) < 0:
        raise ValueError(f"{context}: argument {argument} must not be negative, got {value!r}")
    return (int(value[0]), int(value[1]))


def positive_count(value, context, argument):
    """An int > 0 (a factor or a repeat count)."""
    if not is_integer(value) or value <= 0:
        raise ValueError(f"{context}: argument {argument} must be a positive int, got "
                         f"{value!r}")
    return int(value)


def check_steps(layer, input_shape, kernel_size, strides, dilation_rate):
    """An input long enough for the kernel under 'valid' padding."""
    steps = steps_of(input_shape, layer.data_format)
    span = dilated_kernel(kernel_size, dilation_rate)
    if conv_output_length(steps, span, strides, layer.padding) <= 0:
        raise ValueError(f"{layer.context}: an input of {steps} steps is shorter than the "
                         f"kernel (kernel_size={kernel_size}, dilation_rate={dilation_rate}, "
                         f"padding '{layer.padding}')")
