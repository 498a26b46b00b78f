"""LSTMCell (`keras.layers.LSTMCell`)."""

import numpy as np

from ...ops.recurrent_cells import LSTM as ENGINE_LSTM
from .recurrent_cell import _RecurrentCell


class LSTMCell(_RecurrentCell):
    """The weights and arguments of one LSTM step; `keras.layers.RNN(LSTMCell(...))` runs it
    over a sequence as one oneDNN LSTM primitive (kiln never loops over steps in Python).

    Args: units, activation ('tanh'), recurrent_activation ('sigmoid'), use_bias,
    kernel_initializer, recurrent_initializer, bias_initializer, unit_forget_bias (the forget
    gate's bias starts at 1), kernel / recurrent / bias regularizers and constraints, dropout
    (on the input: one mask per sample and feature), recurrent_dropout (on h), seed.
    Activations: any of those LSTM lists (others than tanh / sigmoid run on the fused
    recurrence).

    Call: cell(x_t, [h, c]) -> (h, [h, c]) for one step (batch, features).
    """

    gates = 4
    state_names = ("h", "c")
    engine_cell = ENGINE_LSTM

    def __init__(self, units, activation="tanh", recurrent_activation="sigmoid",
                 use_bias=True, kernel_initializer="glorot_uniform",
                 recurrent_initializer="orthogonal", bias_initializer="zeros",
                 unit_forget_bias=True, **kwargs):
        super().__init__(units, activation=activation, use_bias=use_bias,
                         kernel_initializer=kernel_initializer,
                         recurrent_initializer=recurrent_initializer,
                         bias_initializer=bias_initializer, **kwargs)
        self.recurrent_activation = self._activation_name(recurrent_activation,
                                                          "recurrent_activation")
        self.unit_forget_bias = bool(unit_forget_bias)

    def bias_initial_value(self, shape):
        if not self.unit_forget_bias:
            return self.bias_initializer(shape)
        units = self.units
        return np.concatenate([self.bias_initializer((units,)), np.ones(units, np.float32),
                               self.bias_initializer((2 * units,))])

    def get_config(self):
        return {**super().get_config(), "recurrent_activation": self.recurrent_activation,
                "unit_forget_bias": self.unit_forget_bias}
