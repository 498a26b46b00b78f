"""Keras 2's `keras.layers.recurrent` path (old scripts import from it);
the layers live in their own modules.
`__all__` is empty so `keras.layers` does not list them twice."""

from .gru import GRU  # noqa: F401
from .gru_cell import GRUCell  # noqa: F401
from .lstm import LSTM  # noqa: F401
from .lstm_cell import LSTMCell  # noqa: F401
from .rnn import RNN  # noqa: F401
from .simple_rnn import SimpleRNN  # noqa: F401
from .simple_rnn_cell import SimpleRNNCell  # noqa: F401
from .stacked_rnn_cells import StackedRNNCells  # noqa: F401

__all__ = []
