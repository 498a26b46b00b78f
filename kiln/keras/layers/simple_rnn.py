"""SimpleRNN layer (`keras.layers.SimpleRNN`)."""

from .rnn import _CellLayer
from .simple_rnn_cell import SimpleRNNCell


class SimpleRNN(_CellLayer):
    """Fully connected recurrence h = activation(x W + h U + b) over a whole sequence: an RNN
    over a SimpleRNNCell, one oneDNN vanilla RNN primitive forward and one backward
    (ops/recurrent.py); with a mask, recurrent_dropout in training or another activation,
    the fused numba recurrence (ops/recurrent_fused.py).

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

    cell_class = SimpleRNNCell
    cell_name = "simple_rnn_cell"
    class_name_for_names = "SimpleRnn"  # Keras's snake case of the class name

    def get_config(self):
        config = super().get_config()
        config.pop("seed")  # Keras 3's SimpleRNN does not write its cell's seed
        return config
