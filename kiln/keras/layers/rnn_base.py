"""What SimpleRNN, LSTM and GRU share: Keras 3's RNN arguments, the cell holding the weights,
the call (sequence, initial_state, mask) and the config. The engine op is ops/recurrent.py: one
oneDNN RNN primitive over the whole sequence, or the fused numba recurrence for masks,
recurrent dropout and other activations (see docs/recurrent.md for what runs where).

Keras 3 keeps a recurrent layer's weights in its `cell` (paths "<layer>/lstm_cell/kernel");
so does kiln, so `layer.cell.kernel`, `get_weights()` and saved files agree with Keras.
"""

import numpy as np

from ...graph.symbolic import apply
from ...ops.recurrent import RecurrentOp
from ...ops.recurrent_activations import ACTIVATION_CODES
from ...ops.recurrent_state import RecurrentStateOp
from ...ops.sequence_dropout import SequenceDropoutOp
from .. import constraints, initializers, regularizers
from .base_layer import Layer, is_integer

__all__ = []  # base classes: the layers are simple_rnn.py, lstm.py, gru.py


class _RecurrentCell(Layer):
    """The weights of a recurrent layer, as Keras's SimpleRNNCell / LSTMCell / GRUCell hold
    them (kiln computes the whole sequence in the layer's op, never cell by cell)."""

    def __init__(self, layer, name, class_name):
        self._layer_name = layer.name  # before Layer.__init__: context reads it
        self._class_name = class_name
        super().__init__(name=name)
        self.units = layer.units

    @property
    def weight_prefix(self):
        return f"{self._layer_name}/{self.name}"

    @property
    def context(self):
        return f"{self._class_name} '{self._layer_name}/{self.name}'"


class _RecurrentLayer(Layer):
    """Base of SimpleRNN, LSTM and GRU.

    Subclasses set `cell_name`, `gates` and implement `make_op()`; `build()` creates the
    kernel (input_dim, gates * units), recurrent_kernel (units, gates * units) and bias.
    """

    cell_name = "cell"
    gates = 1
    state_names = ("h",)

    def __init__(self, units, activation="tanh", use_bias=True,
                 kernel_initializer="glorot_uniform", recurrent_initializer="orthogonal",
                 bias_initializer="zeros", kernel_regularizer=None, recurrent_regularizer=None,
                 bias_regularizer=None, kernel_constraint=None, recurrent_constraint=None,
                 bias_constraint=None, dropout=0.0, recurrent_dropout=0.0,
                 return_sequences=False, return_state=False, go_backwards=False,
                 stateful=False, unroll=False, seed=None, **kwargs):
        # kernel choices (Keras 2's implementation, Keras 3's use_cudnn): one primitive here
        kwargs.pop("implementation", None)
        kwargs.pop("use_cudnn", None)
        time_major = kwargs.pop("time_major", False)
        zero_output_for_mask = kwargs.pop("zero_output_for_mask", False)
        input_length = kwargs.pop("input_length", None)  # Keras 2: with input_dim
        if input_length is not None and "input_dim" in kwargs:
            kwargs["input_shape"] = (input_length, kwargs.pop("input_dim"))
        super().__init__(**kwargs)
        if not is_integer(units) or units <= 0:
            raise ValueError(f"{self.context}: argument units must be a positive int, "
                             f"got {units!r}")
        self.units = int(units)
        self.activation = activation
        self.use_bias = bool(use_bias)
        self.return_sequences = bool(return_sequences)
        self.return_state = bool(return_state)
        self.go_backwards = bool(go_backwards)
        self.stateful, self.unroll, self.seed = bool(stateful), bool(unroll), seed
        self.zero_output_for_mask = zero_output_for_mask
        self.dropout = min(1.0, max(0.0, float(dropout)))
        self.recurrent_dropout = min(1.0, max(0.0, float(recurrent_dropout)))
        if time_major:
            raise NotImplementedError(f"{self.context}: argument time_major=True is not "
                                      "supported yet; expected False")
        self.supports_masking = True
        context = self.context
        self.kernel_initializer = initializers.get(kernel_initializer, context,
                                                   "kernel_initializer")
        self.recurrent_initializer = initializers.get(recurrent_initializer, context,
                                                      "recurrent_initializer")
        self.bias_initializer = initializers.get(bias_initializer, context, "bias_initializer")
        self.kernel_regularizer = regularizers.get(kernel_regularizer, context,
                                                   "kernel_regularizer")
        self.recurrent_regularizer = regularizers.get(recurrent_regularizer, context,
                                                      "recurrent_regularizer")
        self.bias_regularizer = regularizers.get(bias_regularizer, context, "bias_regularizer")
        self.kernel_constraint = constraints.get(kernel_constraint, context,
                                                 "kernel_constraint")
        self.recurrent_constraint = constraints.get(recurrent_constraint, context,
                                                    "recurrent_constraint")
        self.bias_constraint = constraints.get(bias_constraint, context, "bias_constraint")
        self.cell = _RecurrentCell(self, self.cell_name, f"{type(self).__name__}Cell")
        self.input_dropout = (SequenceDropoutOp(self.name, self.dropout, seed)
                              if 0 < self.dropout < 1 else None)

    def _activation_name(self, value, argument):
        """A Keras activation given by name (or as keras.activations' function; None is
        'linear') that the recurrent kernels compute; anything else is refused, naming the
        layer and the argument."""
        if value is None:
            return "linear"
        name = value if isinstance(value, str) else getattr(value, "__name__", None)
        if name not in ACTIVATION_CODES:
            raise NotImplementedError(
                f"{self.context}: argument {argument}={value!r} is not supported yet; "
                f"expected one of {sorted(ACTIVATION_CODES)}")
        return "silu" if name == "swish" else name  # Keras's config spells it so

    def nest_in(self, scope, flip_output=False):
        """Make this layer a part of the layer named `scope` (Bidirectional): its weights
        become "<scope>/<name>/<cell>/kernel", as Keras 3 names them, and with `flip_output`
        a returned sequence comes in the other time order."""
        path = f"{scope}/{self.name}"
        self.cell._layer_name = path
        self.op.name, self.op.weights = path, f"{path}/{self.cell_name}"
        self.op.flip_output = bool(flip_output)

    # -- weights ------------------------------------------------------------------------------
    def bias_shape(self):
        return (self.gates * self.units,)

    def bias_initial_value(self, shape):
        return self.bias_initializer(shape)

    def build(self, input_shape):
        if input_shape and isinstance(input_shape[0], (tuple, list)):
            input_shape = input_shape[0]  # Keras 2's [sequences, *initial states]
        if len(input_shape) != 3:
            raise ValueError(f"{self.context}: expected a 3D input (batch, timesteps, "
                             f"features), got shape {tuple(input_shape)}")
        if input_shape[-1] is None:
            raise ValueError(f"{self.context}: the last dimension of the input (features) "
                             "must be known")
        channels, width = int(input_shape[-1]), self.gates * self.units
        dims = self.op.parameter_dims([(1, 1, channels)])
        cell = self.cell
        cell.kernel = cell.add_weight("kernel", (channels, width), self.kernel_initializer,
                                      *dims["kernel"], regularizer=self.kernel_regularizer,
                                      constraint=self.kernel_constraint)
        cell.recurrent_kernel = cell.add_weight(
            "recurrent_kernel", (self.units, width), self.recurrent_initializer,
            *dims["recurrent_kernel"], regularizer=self.recurrent_regularizer,
            constraint=self.recurrent_constraint)
        if self.use_bias:
            cell.bias = cell.add_weight("bias", self.bias_shape(), self.bias_initial_value,
                                        *dims["bias"], regularizer=self.bias_regularizer,
                                        constraint=self.bias_constraint)
        cell.built = True
        if self.stateful:
            self._keep_states(input_shape[0])

    def _keep_states(self, batch):
        """stateful: the final states of one batch are the initial states of the next, kept
        here (not weights: Keras keeps them untracked too) until reset_state()."""
        if batch is None:
            raise ValueError(f"{self.context}: when using `stateful=True` in a RNN, the batch "
                             "size must be static. Found dynamic batch size: give the model "
                             "a fixed batch size (Input(batch_size=...), batch_shape or "
                             "batch_input_shape)")
        self.op.kept_states = {state: np.zeros((int(batch), self.units), np.float32)
                               for state in self.state_names}

    def reset_state(self):
        """Zero the kept states of a stateful layer (Keras 3's spelling)."""
        if not self.stateful or self.op.kept_states is None:
            return
        for kept in self.op.kept_states.values():
            kept.fill(0.0)

    def reset_states(self):
        self.reset_state()

    @property
    def states(self):
        """A stateful layer's kept states (arrays), else None."""
        kept = self.op.kept_states
        return None if kept is None else [kept[state] for state in self.state_names]

    # -- call ---------------------------------------------------------------------------------
    def call(self, sequences, initial_state=None, mask=None, training=None):
        if isinstance(mask, (list, tuple)):  # the masks of [sequences, *states]: the first
            mask = mask[0]
        states = [] if initial_state is None else (
            list(initial_state) if isinstance(initial_state, (list, tuple))
            else [initial_state])
        if isinstance(sequences, (list, tuple)):  # Keras 2: [sequences, *initial states]
            sequences, states = sequences[0], [*sequences[1:], *states]
        if states and len(states) != len(self.state_names):
            raise ValueError(f"{self.context}: argument initial_state must hold "
                             f"{len(self.state_names)} tensor(s) of shape (batch, "
                             f"{self.units}), got {len(states)}")
        if self.input_dropout is not None:  # one mask per sample and feature, every step
            sequences = apply(self.input_dropout, sequences)
        if mask is None:
            output = apply(self.op, [sequences, *states])
        else:  # the fused kernel: a masked step keeps the previous states
            output = apply(self.op.with_mask(self.zero_output_for_mask),
                           [sequences, *states, mask])
        if not self.return_state:
            return output
        return [output, *(apply(RecurrentStateOp(f"{self.name}/state_{state}", state,
                                                 self.units), output)
                          for state in self.state_names)]

    def compute_mask(self, inputs, previous_mask):
        """As Keras 3's RNN: a returned sequence keeps the input's mask, a last output and
        the states have none."""
        if isinstance(previous_mask, (list, tuple)):
            previous_mask = previous_mask[0] if previous_mask else None
        output_mask = previous_mask if self.return_sequences else None
        if self.return_state:
            return [output_mask, *(None for _ in self.state_names)]
        return output_mask

    def make_op(self, cell, recurrent_activation="sigmoid"):
        """The engine op: RecurrentOp(name, cell, units, ...) (see ops/recurrent.py)."""
        return RecurrentOp(self.name, cell, self.units, self.activation, self.use_bias,
                           self.return_sequences, self.go_backwards,
                           weights=f"{self.name}/{self.cell_name}",
                           recurrent_activation=recurrent_activation,
                           recurrent_dropout=self.recurrent_dropout, seed=self.seed)

    # -- config -------------------------------------------------------------------------------
    def rnn_config(self):
        """The keys every Keras 3 RNN layer writes, in its order."""
        return {"return_sequences": self.return_sequences, "return_state": self.return_state,
                "go_backwards": self.go_backwards, "stateful": self.stateful,
                "unroll": self.unroll, "zero_output_for_mask": self.zero_output_for_mask,
                "units": self.units}

    def weights_config(self):
        """Initializers, regularizers and constraints of the three weights (Keras's keys)."""
        config = {"kernel_initializer": initializers.serialize(self.kernel_initializer),
                  "recurrent_initializer": initializers.serialize(self.recurrent_initializer),
                  "bias_initializer": initializers.serialize(self.bias_initializer)}
        regularizer_keys = ("kernel_regularizer", "recurrent_regularizer", "bias_regularizer")
        constraint_keys = ("kernel_constraint", "recurrent_constraint", "bias_constraint")
        penalties = {key: None if getattr(self, key) is None
                     else regularizers.serialize(getattr(self, key))
                     for key in regularizer_keys}
        penalties["activity_regularizer"] = None if self.activity_regularizer is None \
            else regularizers.serialize(self.activity_regularizer)
        penalties.update({key: None if getattr(self, key) is None
                          else constraints.serialize(getattr(self, key))
                          for key in constraint_keys})
        return {**config, **penalties}

    def get_config(self):
        return {**super().get_config(), **self.rnn_config()}
