"""The RNN wrapper (`keras.layers.RNN`) and the base of SimpleRNN, LSTM and GRU, which are an
RNN over their own cell, as in Keras 3."""

from .base_layer import Layer, unique_name
from .rnn_base import _RecurrentLayer


class RNN(_RecurrentLayer):
    """A recurrent layer over a cell: SimpleRNNCell, LSTMCell, GRUCell, or a StackedRNNCells
    (or a list) of them. Each cell runs over the whole sequence as one oneDNN RNN primitive
    forward and one backward (ops/recurrent.py); a stack chains one per cell. A custom cell
    class (a layer with `state_size` and `call(inputs, states)`) is refused: kiln never loops
    over steps in Python.

    Args: cell, return_sequences, return_state (the output, then the final states: a single
    cell's in order, a stack's per cell, [h, c] for an LSTMCell), go_backwards, stateful (with
    a fixed batch size; reset_state()), unroll (the same computation), zero_output_for_mask.
    The cells' dropout acts on each cell's input, as the LSTM layer's.

    Call: layer(sequences, initial_state=[...]): a single cell's states, or a stack's, one
    entry per cell.
    """

    def get_config(self):
        from ..saving.serialization import serialize_keras_object

        return {**super().get_config(), **self.rnn_config(),
                "cell": serialize_keras_object(self.cell)}

    @classmethod
    def from_config(cls, config, custom_objects=None):
        from ..saving.serialization import deserialize_keras_object

        config = dict(config)
        cell = deserialize_keras_object(config.pop("cell"), custom_objects=custom_objects)
        return cls(cell, **config)


# the cell's arguments a SimpleRNN / LSTM / GRU passes on (and reads back as its own)
CELL_ARGUMENTS = (
    "kernel_initializer", "recurrent_initializer", "bias_initializer", "kernel_regularizer",
    "recurrent_regularizer", "bias_regularizer", "kernel_constraint", "recurrent_constraint",
    "bias_constraint", "dropout", "recurrent_dropout", "seed", "unit_forget_bias",
    "reset_after", "implementation", "activation", "recurrent_activation", "use_bias")


class _CellLayer(RNN):
    """SimpleRNN, LSTM, GRU: an RNN over a cell made from the layer's arguments (Keras 3
    names it 'lstm_cell', ...); the cell's arguments read as the layer's (`layer.activation`).

    Subclasses set `cell_class` and `cell_name`."""

    cell_class = None
    cell_name = "cell"
    class_name_for_names = None  # the name unique_name() makes names from, if not the class's

    def __init__(self, units, *cell_args, **kwargs):
        if kwargs.get("name") is None:  # before the cell, whose errors name this layer
            kwargs["name"] = unique_name(self.class_name_for_names or type(self).__name__)
        cell_kwargs = {key: kwargs.pop(key) for key in CELL_ARGUMENTS if key in kwargs}
        cell = self.cell_class(units, *cell_args, name=self.cell_name,
                               dtype=kwargs.get("dtype"), trainable=kwargs.get("trainable", True),
                               owner=f"{type(self).__name__} '{kwargs['name']}'", **cell_kwargs)
        super().__init__(cell, **kwargs)

    def __getattr__(self, name):
        cell = self.__dict__.get("cell")
        if cell is not None and name in CELL_ARGUMENTS:
            return getattr(cell, name)
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def get_config(self):
        cell_config = {key: value for key, value in self.cell.get_config().items()
                       if key not in ("name", "trainable", "dtype")}
        regularizer = Layer.get_config(self).get("activity_regularizer")
        return {**Layer.get_config(self), **self.rnn_config(), **cell_config,
                "activity_regularizer": regularizer}

    @classmethod
    def from_config(cls, config, custom_objects=None):
        return cls(**config)
