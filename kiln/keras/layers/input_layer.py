"""InputLayer and Input: declare a model's input shape (`keras.layers.InputLayer`)."""

from .base_layer import Layer


class InputLayer(Layer):
    """Args: input_shape (or shape): the input shape without the batch."""

    def __init__(self, input_shape=None, shape=None, **kwargs):
        super().__init__(input_shape=input_shape if input_shape is not None else shape, **kwargs)
        if self.input_shape_arg is None:
            raise ValueError(f"{self.context}: argument shape must be given, e.g. (28, 28, 1)")

    def call(self, inputs):
        return inputs


def Input(shape, name=None, **kwargs):  # noqa: N802 (Keras name)
    """For `Sequential([Input((28, 28, 1)), ...])`."""
    return InputLayer(shape=shape, name=name, **kwargs)
