"""LSTM layer (`keras.layers.LSTM`)."""

from .lstm_cell import LSTMCell
from .rnn import _CellLayer


class LSTM(_CellLayer):
    """Long short-term memory over a whole sequence: an RNN over an LSTMCell, one oneDNN LSTM
    primitive forward and one backward (ops/recurrent.py).

    Args: units, activation ('tanh'), recurrent_activation ('sigmoid'), use_bias,
    kernel_initializer, recurrent_initializer, bias_initializer, unit_forget_bias (the
    forget gate's bias starts at 1), kernel / recurrent / bias regularizers and constraints,
    return_sequences, return_state ([output, h, c]), go_backwards, unroll (the same
    computation), seed, dropout (on the input: one mask per sample and feature).
    stateful (with a fixed batch size; reset_state()). recurrent_dropout is not supported
    yet.

    Call: layer(sequences, initial_state=[h, c]).
    """

    cell_class = LSTMCell
    cell_name = "lstm_cell"
