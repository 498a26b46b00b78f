"""What SimpleRNNCell, LSTMCell and GRUCell share: Keras 3's cell arguments, the weights
(kernel, recurrent_kernel, bias) and the one-step call.

A cell never computes a sequence step by step here: an RNN layer (rnn_base.py) maps each
cell's arguments onto one engine op, ops/recurrent.py (one oneDNN RNN primitive over the
whole sequence). The cell keeps the weights, as Keras's cells do, so their paths are
"<rnn>/lstm_cell/kernel" (or "<rnn>/stacked_rnn_cells/lstm_cell/kernel" in a stack). Called
alone on one step, `cell(x_t, states)`, it runs that op on a sequence of length one.
"""

from ...graph.symbolic import apply
from ...ops.recurrent import RecurrentOp
from ...ops.recurrent_activations import ACTIVATION_CODES
from ...ops.recurrent_state import RecurrentStateOp
from ...ops.reshape import ReshapeOp
from ...ops.sequence_dropout import SequenceDropoutOp
from .. import constraints, initializers, regularizers
from .base_layer import Layer, is_integer

__all__ = []  # a base class: the cells are simple_rnn_cell.py, lstm_cell.py, gru_cell.py


class _RecurrentCell(Layer):
    """Base of SimpleRNNCell, LSTMCell and GRUCell.

    Subclasses set `gates`, `state_names` and the property `engine_cell` (the oneDNN cell of
    ops/recurrent.py); a cell without a recurrent_activation argument (SimpleRNNCell) has
    none.

    `owner`: the context of the layer that made this cell (LSTM makes its LSTMCell), so that
    errors name that layer, as the user wrote it."""

    gates = 1
    state_names = ("h",)
    recurrent_activation = "sigmoid"  # read by the op of a cell that has no such argument

    def __init__(self, units, activation="tanh", use_bias=True,
                 kernel_initializer="glorot_uniform", recurrent_initializer="orthogonal",
                 bias_initializer="zeros", kernel_regularizer=None, recurrent_regularizer=None,
                 bias_regularizer=None, kernel_constraint=None, recurrent_constraint=None,
                 bias_constraint=None, dropout=0.0, recurrent_dropout=0.0, seed=None,
                 owner=None, **kwargs):
        kwargs.pop("implementation", None)  # Keras's kernel choice: one primitive here
        self._scope, self._owner = None, owner  # before Layer.__init__: context reads them
        super().__init__(**kwargs)
        if not is_integer(units) or units <= 0:
            raise ValueError(f"{self.context}: argument units must be a positive int, "
                             f"got {units!r}")
        self.units = int(units)
        self.activation = self._activation_name(activation, "activation")
        self.use_bias = bool(use_bias)
        self.dropout = min(1.0, max(0.0, float(dropout)))
        self.recurrent_dropout = min(1.0, max(0.0, float(recurrent_dropout)))
        self.seed = seed
        context = self.context
        for kind, module in (("initializer", initializers), ("regularizer", regularizers),
                             ("constraint", constraints)):
            for weight in ("kernel", "recurrent", "bias"):
                argument = f"{weight}_{kind}"
                setattr(self, argument, module.get(locals()[argument], context, argument))
        self._steps = 0  # one-step calls so far (each names its op apart)

    def _activation_name(self, value, argument):
        """A Keras activation given by name (or as keras.activations' function; None is
        'linear') that the recurrent kernels compute (oneDNN's cells or the fused
        recurrence); anything else is refused, naming the layer and the argument."""
        if value is None:
            return "linear"
        name = value if isinstance(value, str) else getattr(value, "__name__", None)
        if name not in ACTIVATION_CODES:
            raise NotImplementedError(
                f"{self.context}: argument {argument}={value!r} is not supported yet; "
                f"expected one of {sorted(ACTIVATION_CODES)}")
        return "silu" if name == "swish" else name  # Keras's config spells it so

    # -- where the weights live ---------------------------------------------------------------
    def nest_in(self, scope):
        """Make this cell a part of the layer (path) `scope`: its weights become
        "<scope>/<name>/kernel", as Keras 3 names a cell's weights."""
        self._scope = scope

    @property
    def weight_prefix(self):
        return self.name if self._scope is None else f"{self._scope}/{self.name}"

    @property
    def context(self):
        if self._owner is not None:
            return self._owner
        return f"{type(self).__name__} '{self.weight_prefix}'"

    @property
    def state_size(self):
        sizes = [self.units] * len(self.state_names)
        return sizes[0] if len(sizes) == 1 else sizes

    @property
    def output_size(self):
        return self.units

    # -- the engine op ------------------------------------------------------------------------
    def make_op(self, name, return_sequences=False, go_backwards=False, masked=False,
                zero_output_for_mask=False):
        """The op computing this cell over a whole sequence (ops/recurrent.py): oneDNN's
        primitive, or the fused recurrence for a mask (`masked`: the op's last input),
        recurrent dropout in training and activations oneDNN's cells lack."""
        return RecurrentOp(name, self.engine_cell, self.units, self.activation, self.use_bias,
                           return_sequences, go_backwards, weights=self.weight_prefix,
                           recurrent_activation=self.recurrent_activation,
                           recurrent_dropout=self.recurrent_dropout, seed=self.seed,
                           masked=masked, zero_output_for_mask=zero_output_for_mask,
                           gate_input_dropout=self.dropout if self.dropout_per_gate else 0.0)

    @property
    def dropout_per_gate(self):
        """Whether `dropout` draws one input mask per gate: Keras 3's LSTM and GRU switch to
        their implementation 1 when `recurrent_dropout` is set (SimpleRNN has one gate)."""
        return self.gates > 1 and self.recurrent_dropout > 0 and 0 < self.dropout < 1

    def make_input_dropout(self, name):
        """Keras's cell dropout shared by the gates: one mask per sample and feature, at
        every step (or None: no dropout, or one mask per gate inside the op)."""
        return SequenceDropoutOp(name, self.dropout, self.seed) \
            if 0 < self.dropout < 1 and not self.dropout_per_gate else None

    # -- weights ------------------------------------------------------------------------------
    def bias_shape(self):
        return (self.gates * self.units,)

    def bias_initial_value(self, shape):
        return self.bias_initializer(shape)

    def build(self, input_shape):
        """The weights for steps of `input_shape` (batch, features)."""
        if input_shape[-1] is None:
            raise ValueError(f"{self.context}: the last dimension of the input (features) "
                             "must be known")
        channels, width = int(input_shape[-1]), self.gates * self.units
        dims = self.make_op(self.name).parameter_dims([(1, 1, channels)])
        self.kernel = self.add_weight("kernel", (channels, width), self.kernel_initializer,
                                      *dims["kernel"], regularizer=self.kernel_regularizer,
                                      constraint=self.kernel_constraint)
        self.recurrent_kernel = self.add_weight(
            "recurrent_kernel", (self.units, width), self.recurrent_initializer,
            *dims["recurrent_kernel"], regularizer=self.recurrent_regularizer,
            constraint=self.recurrent_constraint)
        self.bias = None
        if self.use_bias:
            self.bias = self.add_weight("bias", self.bias_shape(), self.bias_initial_value,
                                        *dims["bias"], regularizer=self.bias_regularizer,
                                        constraint=self.bias_constraint)
        self.built = True

    # -- one step -----------------------------------------------------------------------------
    def call(self, inputs, states, training=None):
        """One step: inputs (batch, features) and the states -> (output, new states), the
        states as given (a list, or one tensor for a one-state cell). It runs the sequence op
        on a sequence of one step."""
        listed = isinstance(states, (list, tuple))
        states = list(states) if listed else [states]
        if len(inputs.shape) != 2:
            raise ValueError(f"{self.context}: a cell is called on one step (batch, features),"
                             f" got shape {tuple(inputs.shape)}; use keras.layers.RNN(cell) "
                             "for sequences")
        if len(states) != len(self.state_names):
            raise ValueError(f"{self.context}: argument states must hold "
                             f"{len(self.state_names)} tensor(s) of shape (batch, "
                             f"{self.units}), got {len(states)}")
        name = f"{self.name}/step" + (f"_{self._steps}" if self._steps else "")
        self._steps += 1
        sequence = apply(ReshapeOp(f"{name}/as_sequence", (1, int(inputs.shape[-1]))), inputs)
        dropout = self.make_input_dropout(name)
        if dropout is not None:
            sequence = apply(dropout, sequence)
        output = apply(self.make_op(name), [sequence, *states])
        new_states = [apply(RecurrentStateOp(f"{name}/state_{state}", state, self.units),
                            output) for state in self.state_names]
        return output, (new_states if listed else new_states[0])

    # -- config -------------------------------------------------------------------------------
    def weights_config(self):
        """Initializers, regularizers and constraints of the three weights (Keras's keys)."""
        config = {}
        for kind, module in (("initializer", initializers), ("regularizer", regularizers),
                             ("constraint", constraints)):
            for weight in ("kernel", "recurrent", "bias"):
                value = getattr(self, f"{weight}_{kind}")
                config[f"{weight}_{kind}"] = None if value is None else module.serialize(value)
        return config

    def get_config(self):
        return {**super().get_config(), "units": self.units, "activation": self.activation,
                "use_bias": self.use_bias, **self.weights_config(), "dropout": self.dropout,
                "recurrent_dropout": self.recurrent_dropout, "seed": self.seed}
