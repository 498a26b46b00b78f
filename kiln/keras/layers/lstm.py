"""LSTM layer (`keras.layers.LSTM`)."""

import numpy as np

from ...ops.recurrent import LSTM as LSTM_CELL
from .rnn_base import _RecurrentLayer


class LSTM(_RecurrentLayer):
    """Long short-term memory over a whole sequence: one oneDNN LSTM primitive forward and
    one backward (ops/recurrent.py); with a mask, recurrent_dropout in training or other
    activations, the fused numba recurrence (ops/recurrent_fused.py).

    Args: units, activation ('tanh'), recurrent_activation ('sigmoid'; any of Keras's
    tanh, sigmoid, relu, linear, hard_sigmoid, elu, softplus, softsign, selu, exponential,
    silu / swish, relu6 for either), use_bias,
    kernel_initializer, recurrent_initializer, bias_initializer, unit_forget_bias (the
    forget gate's bias starts at 1), kernel / recurrent / bias regularizers and constraints,
    return_sequences, return_state ([output, h, c]), go_backwards, unroll (the same
    computation), seed, dropout (on the input: one mask per sample and feature),
    recurrent_dropout (on h: one mask per sample, gate and unit, as Keras 3),
    stateful (with a fixed batch size; reset_state()), zero_output_for_mask.

    Call: layer(sequences, initial_state=[h, c], mask=None); a mask (Embedding's
    mask_zero, Masking) arrives by itself: a masked step keeps the previous states.
    """

    cell_name = "lstm_cell"
    gates = 4
    state_names = ("h", "c")

    def __init__(self, units, activation="tanh", recurrent_activation="sigmoid",
                 use_bias=True, unit_forget_bias=True, **kwargs):
        super().__init__(units, activation=activation, use_bias=use_bias, **kwargs)
        self.activation = self._activation_name(activation, "activation")
        self.recurrent_activation = self._activation_name(recurrent_activation,
                                                          "recurrent_activation")
        self.unit_forget_bias = bool(unit_forget_bias)
        self.op = self.make_op(LSTM_CELL, self.recurrent_activation)

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
