"""LSTM layer (`keras.layers.LSTM`)."""

import numpy as np

from ...ops.recurrent import LSTM as LSTM_CELL
from .rnn_base import _RecurrentLayer


class LSTM(_RecurrentLayer):
    """Long short-term memory over a whole sequence: one oneDNN LSTM primitive forward and
    one backward (ops/recurrent.py).

    Args: units, activation ('tanh'), recurrent_activation ('sigmoid'), use_bias,
    kernel_initializer, recurrent_initializer, bias_initializer, unit_forget_bias (the
    forget gate's bias starts at 1), kernel / recurrent / bias regularizers and constraints,
    return_sequences, return_state ([output, h, c]), go_backwards, unroll (the same
    computation), seed, dropout (on the input: one mask per sample and feature).
    stateful (with a fixed batch size; reset_state()). recurrent_dropout is not
    supported yet.

    Call: layer(sequences, initial_state=[h, c]).
    """

    cell_name = "lstm_cell"
    gates = 4
    state_names = ("h", "c")

    def __init__(self, units, activation="tanh", recurrent_activation="sigmoid",
                 use_bias=True, unit_forget_bias=True, **kwargs):
        super().__init__(units, activation=activation, use_bias=use_bias, **kwargs)
        self.activation = self._activation_name(activation, "activation", ("tanh",))
        self.recurrent_activation = self._activation_name(
            recurrent_activation, "recurrent_activation", ("sigmoid",))
        self.unit_forget_bias = bool(unit_forget_bias)
        self.op = self.make_op(LSTM_CELL)

    def bias_initial_value(self, shape):
        if not self.unit_forget_bias:
            return self.bias_initializer(shape)
        units = self.units
        return np.concatenate([self.bias_initializer((units,)), np.ones(units, np.float32),
                               self.bias_initializer((2 * units,))])

    def get_config(self):
        return {**super().get_config(), "activation": self.activation,
                "recurrent_activation": self.recurrent_activation, "use_bias": self.use_bias,
                **self.weights_config(), "unit_forget_bias": self.unit_forget_bias,
                "dropout": self.dropout, "recurrent_dropout": self.recurrent_dropout,
                "seed": self.seed}
