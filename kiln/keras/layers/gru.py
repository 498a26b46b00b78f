"""GRU layer (`keras.layers.GRU`)."""

from ...ops.recurrent import GRU as GRU_CELL
from ...ops.recurrent import LBR_GRU
from .rnn_base import _RecurrentLayer


class GRU(_RecurrentLayer):
    """Gated recurrent unit over a whole sequence: one oneDNN GRU primitive forward and one
    backward (ops/recurrent.py). Keras 3's default `reset_after=True` is oneDNN's
    linear-before-reset GRU (its bias (2, 3 * units): input and recurrent biases);
    `reset_after=False` the plain GRU (bias (3 * units,)). With a mask, recurrent_dropout in
    training or other activations: the fused numba recurrence (ops/recurrent_fused.py).

    Args: units, activation ('tanh'), recurrent_activation ('sigmoid'; either any of the
    activations LSTM lists), use_bias,
    kernel_initializer, recurrent_initializer, bias_initializer, kernel / recurrent / bias
    regularizers and constraints, return_sequences, return_state ([output, h]),
    go_backwards, unroll (the same computation), reset_after, seed, dropout (on
    the input), recurrent_dropout (on h: one mask per sample, gate and unit, as Keras 3),
    stateful (with a fixed batch size; reset_state()), zero_output_for_mask.

    Call: layer(sequences, initial_state=[h], mask=None); a masked step keeps the previous
    state.
    """

    cell_name = "gru_cell"
    gates = 3

    def __init__(self, units, activation="tanh", recurrent_activation="sigmoid",
                 use_bias=True, reset_after=True, **kwargs):
        super().__init__(units, activation=activation, use_bias=use_bias, **kwargs)
        self.activation = self._activation_name(activation, "activation")
        self.recurrent_activation = self._activation_name(recurrent_activation,
                                                          "recurrent_activation")
        self.reset_after = bool(reset_after)
        self.op = self.make_op(LBR_GRU if self.reset_after else GRU_CELL,
                               self.recurrent_activation)

    def bias_shape(self):
        return (2, 3 * self.units) if self.reset_after else (3 * self.units,)

    def get_config(self):
        return {**super().get_config(), "activation": self.activation,
                "recurrent_activation": self.recurrent_activation, "use_bias": self.use_bias,
                **self.weights_config(), "dropout": self.dropout,
                "recurrent_dropout": self.recurrent_dropout, "reset_after": self.reset_after,
                "seed": self.seed}
