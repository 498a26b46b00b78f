"""SimpleRNNCell (`keras.layers.SimpleRNNCell`)."""

from ...ops.recurrent_cells import VANILLA_RNN
from .base_layer import unique_name
from .recurrent_cell import _RecurrentCell


class SimpleRNNCell(_RecurrentCell):
    """The weights and arguments of one step h = activation(x W + h U + b);
    `keras.layers.RNN(SimpleRNNCell(...))` runs it over a sequence as one oneDNN vanilla RNN
    primitive.

    Args: units, activation ('tanh', 'relu', 'sigmoid', 'linear' or None), use_bias,
    kernel_initializer, recurrent_initializer, bias_initializer, kernel / recurrent / bias
    regularizers and constraints, dropout (on the input), recurrent_dropout (on h), seed.
    Activations: any of those LSTM lists.

    Call: cell(x_t, [h]) -> (h, [h]) for one step (batch, features).
    """

    engine_cell = VANILLA_RNN

    def __init__(self, units, activation="tanh", use_bias=True, **kwargs):
        if kwargs.get("name") is None:  # Keras's snake case of the class name
            kwargs["name"] = unique_name("SimpleRnnCell")
        super().__init__(units, activation=activation, use_bias=use_bias, **kwargs)
