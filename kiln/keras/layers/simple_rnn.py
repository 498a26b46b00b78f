"""SimpleRNN layer (`keras.layers.SimpleRNN`)."""

from ...ops.recurrent import VANILLA_RNN
from .base_layer import unique_name
from .rnn_base import _RecurrentLayer


class SimpleRNN(_RecurrentLayer):
    """Fully connected recurrence h = activation(x W + h U + b) over a whole sequence: one
    oneDNN vanilla RNN primitive forward and one backward (ops/recurrent.py); with a mask,
    recurrent_dropout in training or another activation, the fused numba recurrence
    (ops/recurrent_fused.py).

    Args: units, activation ('tanh', 'relu', 'sigmoid', 'linear' or None on oneDNN; elu,
    softplus, softsign, selu, hard_sigmoid, exponential, silu / swish, relu6 fused), use_bias,
    kernel_initializer, recurrent_initializer, bias_initializer, kernel / recurrent / bias
    regularizers and constraints, return_sequences, return_state ([output, h]),
    go_backwards, unroll (the same computation), seed, dropout (on the input),
    recurrent_dropout (on h: one mask per sample and unit), stateful (with a fixed batch
    size; reset_state()), zero_output_for_mask.

    Call: layer(sequences, initial_state=[h], mask=None); a masked step keeps the previous
    state.
    """

    cell_name = "simple_rnn_cell"
    gates = 1

    def __init__(self, units, activation="tanh", use_bias=True, **kwargs):
        if kwargs.get("name") is None:  # Keras's snake case of the class name
            kwargs["name"] = unique_name("SimpleRnn")
        super().__init__(units, activation=activation, use_bias=use_bias, **kwargs)
        self.activation = self._activation_name(activation, "activation")
        self.op = self.make_op(VANILLA_RNN)

    def get_config(self):
        return {**super().get_config(), "activation": self.activation,
                "use_bias": self.use_bias, **self.weights_config(), "dropout": self.dropout,
                "recurrent_dropout": self.recurrent_dropout}
