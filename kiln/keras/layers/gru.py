"""GRU layer (`keras.layers.GRU`)."""

from .gru_cell import GRUCell
from .rnn import _CellLayer


class GRU(_CellLayer):
    """Gated recurrent unit over a whole sequence: an RNN over a GRUCell, one oneDNN GRU
    primitive forward and one backward (ops/recurrent.py). Keras 3's default
    `reset_after=True` is oneDNN's linear-before-reset GRU (its bias (2, 3 * units): input
    and recurrent biases); `reset_after=False` the plain GRU (bias (3 * units,)).

    Args: units, activation ('tanh'), recurrent_activation ('sigmoid'), use_bias,
    kernel_initializer, recurrent_initializer, bias_initializer, kernel / recurrent / bias
    regularizers and constraints, return_sequences, return_state ([output, h]),
    go_backwards, unroll (the same computation), reset_after, seed, dropout (on
    the input), stateful (with a fixed batch size; reset_state()). recurrent_dropout is not
    supported yet.

    Call: layer(sequences, initial_state=[h]).
    """

    cell_class = GRUCell
    cell_name = "gru_cell"
