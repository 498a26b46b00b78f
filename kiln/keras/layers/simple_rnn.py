"""SimpleRNN layer (`keras.layers.SimpleRNN`)."""

from ...ops.recurrent import VANILLA_ACTIVATIONS, VANILLA_RNN, RecurrentOp
from .base_layer import unique_name
from .rnn_base import _RecurrentLayer


class SimpleRNN(_RecurrentLayer):
    """Fully connected recurrence h = activation(x W + h U + b) over a whole sequence: one
    oneDNN vanilla RNN primitive forward and one backward (ops/recurrent.py).

    Args: units, activation ('tanh', 'relu', 'sigmoid', 'linear' or None), use_bias,
    kernel_initializer, recurrent_initializer, bias_initializer, kernel / recurrent / bias
    regularizers and constraints, return_sequences, return_state ([output, h]),
    go_backwards, unroll (the same computation), seed, dropout (on the input).
    stateful (with a fixed batch size; reset_state()). recurrent_dropout is not
    supported yet.

    Call: layer(sequences, initial_state=[h]).
    """

    cell_name = "simple_rnn_cell"
    gates = 1

    def __init__(self, units, activation="tanh", use_bias=True, **kwargs):
        if kwargs.get("name") is None:  # Keras's snake case of the class name
            kwargs["name"] = unique_name("SimpleRnn")
        super().__init__(units, activation=activation, use_bias=use_bias, **kwargs)
        self.activation = self._activation_name(
            "linear" if activation is None else activation, "activation",
            tuple(VANILLA_ACTIVATIONS))
        self.op = RecurrentOp(self.name, VANILLA_RNN, self.units, self.activation,
                              self.use_bias, self.return_sequences, self.go_backwards,
                              weights=f"{self.name}/{self.cell_name}")

    def get_config(self):
        return {**super().get_config(), "activation": self.activation,
                "use_bias": self.use_bias, **self.weights_config(), "dropout": self.dropout,
                "recurrent_dropout": self.recurrent_dropout}
