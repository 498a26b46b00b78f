"""SimpleRNN layer (`keras.layers.SimpleRNN`)."""

from .rnn import _CellLayer
from .simple_rnn_cell import SimpleRNNCell


class SimpleRNN(_CellLayer):
    """Fully connected recurrence h = activation(x W + h U + b) over a whole sequence: an RNN
    over a SimpleRNNCell, one oneDNN vanilla RNN primitive forward and one backward
    (ops/recurrent.py).

    Args: units, activation ('tanh', 'relu', 'sigmoid', 'linear' or None), use_bias,
    kernel_initializer, recurrent_initializer, bias_initializer, kernel / recurrent / bias
    regularizers and constraints, return_sequences, return_state ([output, h]),
    go_backwards, unroll (the same computation), seed, dropout (on the input).
    stateful (with a fixed batch size; reset_state()). recurrent_dropout is not
    supported yet.

    Call: layer(sequences, initial_state=[h]).
    """

    cell_class = SimpleRNNCell
    cell_name = "simple_rnn_cell"
    class_name_for_names = "SimpleRnn"  # Keras's snake case of the class name

    def get_config(self):
        config = super().get_config()
        config.pop("seed")  # Keras 3's SimpleRNN does not write its cell's seed
        return config
