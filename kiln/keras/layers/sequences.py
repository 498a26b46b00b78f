"""What the 1D layers share: the check of their (batch, steps, channels) input, and the length
of its steps axis in either data format."""


def check_sequence(input_shape, context):
    """A 1D layer reads a 3D tensor."""
    if len(input_shape) != 3:
        raise ValueError(f"{context}: expected a 3D input (batch, steps, channels) or (batch, "
                         f"channels, steps), got shape {tuple(input_shape)}")


def steps_of(input_shape, data_format):
    """The length of the steps axis: the second for channels_last, the last otherwise."""
    return input_shape[1] if data_format == "channels_last" else input_shape[2]
