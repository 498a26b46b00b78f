"""LSTM layer (`keras.layers.LSTM`)."""

from .lstm_cell import LSTMCell
from .rnn import _CellLayer


class LSTM(_CellLayer):
    """Long short-term memory over a whole sequence: an RNN over an LSTMCell, one oneDNN LSTM
    primitive forward and one backward (ops/recurrent.py); with a mask, recurrent_dropout in
    training or other activations, the fused numba recurrence (ops/recurrent_fused.py).

    Args: units, activation ('tanh'), recurrent_activation ('sigmoid'; either may be any of
    tanh, sigmoid, relu, linear, hard_sigmoid, elu, softplus, softsign, selu, exponential,
    silu / swish, relu6), use_bias,
    kernel_initializer, recurrent_initializer, bias_initializer, unit_forget_bias (the
    forget gate's bias starts at 1), kernel / recurrent / bias regularizers and constraints,
    return_sequences, return_state ([output, h, c]), go_backwards, unroll (the same
    computation), seed, dropout (on the input: one mask per sample and feature; with
    recurrent_dropout one per gate, as Keras 3's implementation 1),
    recurrent_dropout (on h: one mask per sample, gate and unit, as Keras 3), stateful (with a
    fixed batch size; reset_state()), zero_output_for_mask.

    Call: layer(sequences, initial_state=[h, c], mask=None); a mask (Embedding's mask_zero,
    Masking) arrives by itself: a masked step keeps the previous states.
    """

    cell_class = LSTMCell
    cell_name = "lstm_cell"
