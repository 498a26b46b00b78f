"""GRU layer (`keras.layers.GRU`)."""

from .gru_cell import GRUCell
from .rnn import _CellLayer


class GRU(_CellLayer):
    """Gated recurrent unit over a whole sequence: an RNN over a GRUCell, one oneDNN GRU
    primitive forward and one backward (ops/recurrent.py). Keras 3's default
    `reset_after=True` is oneDNN's linear-before-reset GRU (its bias (2, 3 * units): input
    and recurrent biases); `reset_after=False` the plain GRU (bias (3 * units,)). With a mask,
    recurrent_dropout in training or other activations: the fused numba recurrence
    (ops/recurrent_fused.py).

    Args: units, activation ('tanh'), recurrent_activation ('sigmoid'; either any of the
    activations LSTM lists), use_bias,
    kernel_initializer, recurrent_initializer, bias_initializer, kernel / recurrent / bias
    regularizers and constraints, return_sequences, return_state ([output, h]),
    go_backwards, unroll (the same computation), reset_after, seed, dropout (on
    the input; with recurrent_dropout one mask per gate, as Keras 3's implementation 1),
    recurrent_dropout (on h: one mask per sample, gate and unit, as Keras 3),
    stateful (with a fixed batch size; reset_state()), zero_output_for_mask.

    Call: layer(sequences, initial_state=[h], mask=None); a masked step keeps the previous
    state.
    """

    cell_class = GRUCell
    cell_name = "gru_cell"
