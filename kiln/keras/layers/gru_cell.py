"""GRUCell (`keras.layers.GRUCell`)."""

from ...ops.recurrent_cells import GRU as ENGINE_GRU
from ...ops.recurrent_cells import LBR_GRU
from .recurrent_cell import _RecurrentCell


class GRUCell(_RecurrentCell):
    """The weights and arguments of one GRU step; `keras.layers.RNN(GRUCell(...))` runs it
    over a sequence as one oneDNN GRU primitive. Keras 3's default `reset_after=True` is
    oneDNN's linear-before-reset GRU (bias (2, 3 * units)); `reset_after=False` the plain GRU
    (bias (3 * units,)).

    Args: units, activation ('tanh'), recurrent_activation ('sigmoid'), use_bias,
    kernel_initializer, recurrent_initializer, bias_initializer, kernel / recurrent / bias
    regularizers and constraints, dropout (on the input), reset_after, seed.
    recurrent_dropout (on h). Activations: any of those LSTM lists.

    Call: cell(x_t, [h]) -> (h, [h]) for one step (batch, features).
    """

    gates = 3

    def __init__(self, units, activation="tanh", recurrent_activation="sigmoid",
                 use_bias=True, kernel_initializer="glorot_uniform",
                 recurrent_initializer="orthogonal", bias_initializer="zeros",
                 kernel_regularizer=None, recurrent_regularizer=None, bias_regularizer=None,
                 kernel_constraint=None, recurrent_constraint=None, bias_constraint=None,
                 dropout=0.0, recurrent_dropout=0.0, reset_after=True, seed=None, **kwargs):
        super().__init__(
            units, activation=activation, use_bias=use_bias,
            kernel_initializer=kernel_initializer, recurrent_initializer=recurrent_initializer,
            bias_initializer=bias_initializer, kernel_regularizer=kernel_regularizer,
            recurrent_regularizer=recurrent_regularizer, bias_regularizer=bias_regularizer,
            kernel_constraint=kernel_constraint, recurrent_constraint=recurrent_constraint,
            bias_constraint=bias_constraint, dropout=dropout,
            recurrent_dropout=recurrent_dropout, seed=seed, **kwargs)
        self.recurrent_activation = self._activation_name(recurrent_activation,
                                                          "recurrent_activation")
        self.reset_after = bool(reset_after)

    @property
    def engine_cell(self):
        return LBR_GRU if self.reset_after else ENGINE_GRU

    def bias_shape(self):
        return (2, 3 * self.units) if self.reset_after else (3 * self.units,)

    def get_config(self):
        return {**super().get_config(), "recurrent_activation": self.recurrent_activation,
                "reset_after": self.reset_after}
