"""What RNN, SimpleRNN, LSTM and GRU share: Keras 3's RNN arguments, the call (sequence,
initial_state) and the mapping of the cells onto the engine op, ops/recurrent.py: one oneDNN
RNN primitive over the whole sequence per cell (see docs/recurrent.md for what runs where).

As in Keras 3, the layer's weights live in its cell ("<layer>/lstm_cell/kernel"), and LSTM is
an RNN over an LSTMCell, so `RNN(LSTMCell(8))` and `LSTM(8)` are one implementation. A
StackedRNNCells is one op per cell, chained: every inner op returns its whole sequence, which
the next one reads; this computes what Keras's step-by-step stack computes, since the cells of
a step only read the previous cell's output of that same step. Under go_backwards every op
runs right to left and the inner ones keep their output aligned with the input (no reversal),
so only the last one puts its sequence in Keras's processing order.
"""

import numpy as np

from ...graph.symbolic import apply
from ...ops.recurrent_state import RecurrentStateOp
from .base_layer import Layer
from .recurrent_cell import _RecurrentCell
from .stacked_rnn_cells import StackedRNNCells

__all__ = []  # a base class: the layers are rnn.py, simple_rnn.py, lstm.py, gru.py

BUILT_IN_CELLS = "SimpleRNNCell, LSTMCell, GRUCell or a StackedRNNCells of them"


class _RecurrentLayer(Layer):
    """The RNN machinery over `cell` (a built-in cell or a StackedRNNCells of them)."""

    def __init__(self, cell, return_sequences=False, return_state=False, go_backwards=False,
                 stateful=False, unroll=False, zero_output_for_mask=False, **kwargs):
        kwargs.pop("use_cudnn", None)  # Keras 3's kernel choice: one primitive here
        time_major = kwargs.pop("time_major", False)
        input_length = kwargs.pop("input_length", None)  # Keras 2: with input_dim
        if input_length is not None and "input_dim" in kwargs:
            kwargs["input_shape"] = (input_length, kwargs.pop("input_dim"))
        super().__init__(**kwargs)
        if time_major:
            raise NotImplementedError(f"{self.context}: argument time_major=True is not "
                                      "supported yet; expected False")
        if isinstance(cell, (list, tuple)):
            cell = StackedRNNCells(cell)
        self.cell = cell
        # the cells in order, not tracked again: they are the cell's (or the stack's)
        self.__dict__["cells"] = self._built_in_cells(cell)
        self.return_sequences = bool(return_sequences)
        self.return_state = bool(return_state)
        self.go_backwards = bool(go_backwards)
        self.stateful, self.unroll = bool(stateful), bool(unroll)
        self.zero_output_for_mask = zero_output_for_mask
        self.supports_masking = True
        self.nest_in(None)

    def _built_in_cells(self, cell):
        """The cells, in order; a custom cell is refused (kiln never loops over steps)."""
        for attribute in ("call", "state_size"):
            if not hasattr(cell, attribute):
                raise ValueError(f"{self.context}: argument cell must have a `{attribute}` "
                                 f"attribute, got {cell!r}")
        cells = list(cell.cells) if isinstance(cell, StackedRNNCells) else [cell]
        for one in cells:
            if not isinstance(one, _RecurrentCell):
                raise NotImplementedError(
                    f"{self.context}: the cell {type(one).__name__} "
                    f"'{getattr(one, 'name', one)}' is a custom cell; only the built-in "
                    f"cells are supported ({BUILT_IN_CELLS}): kiln computes a whole "
                    "sequence in one engine op and never loops over the steps in Python")
        return cells

    # -- the engine ops -----------------------------------------------------------------------
    @property
    def stacked(self):
        return isinstance(self.cell, StackedRNNCells)

    def nest_in(self, scope, flip_output=False):
        """(Re)make the ops, the layer being a part of the layer named `scope` (Bidirectional:
        its weights become "<scope>/<name>/<cell>/kernel", as Keras 3 names them), or of none.
        With `flip_output` a returned sequence comes in the other time order."""
        path = self.name if scope is None else f"{scope}/{self.name}"
        self.cell.nest_in(path)
        last = len(self.cells) - 1
        self.ops, self.input_dropouts = [], []
        for index, cell in enumerate(self.cells):
            name = f"{path}/{cell.name}" if self.stacked else path
            op = cell.make_op(name, self.return_sequences or index < last, self.go_backwards)
            # an inner op of a stack hands its output on in input order (see the module doc)
            op.flip_output = self.go_backwards if index < last else bool(flip_output)
            self.ops.append(op)
            self.input_dropouts.append(cell.make_input_dropout(name))
        if self.stateful and self.built:
            self._keep_states(self._batch)

    @property
    def op(self):
        """The engine op of a single cell (Bidirectional fuses two of them)."""
        return self.ops[0] if len(self.ops) == 1 else None

    @property
    def input_dropout(self):
        return self.input_dropouts[0]

    @property
    def units(self):
        return self.cell.output_size

    @property
    def state_names(self):
        """The states, flattened over the cells: ('h', 'c') for an LSTM."""
        return tuple(state for cell in self.cells for state in cell.state_names)

    # -- weights ------------------------------------------------------------------------------
    def build(self, input_shape):
        if input_shape and isinstance(input_shape[0], (tuple, list)):
            input_shape = input_shape[0]  # Keras 2's [sequences, *initial states]
        if len(input_shape) != 3:
            raise ValueError(f"{self.context}: expected a 3D input (batch, timesteps, "
                             f"features), got shape {tuple(input_shape)}")
        if input_shape[-1] is None:
            raise ValueError(f"{self.context}: the last dimension of the input (features) "
                             "must be known")
        features = int(input_shape[-1])
        for cell in self.cells:
            if not cell.built:
                cell.build((input_shape[0], features))
            if int(cell.kernel.shape[0]) != features:
                raise ValueError(f"{self.context}: the cell {cell.name} was built for "
                                 f"{cell.kernel.shape[0]} input features, got {features}")
            features = cell.units
        self.cell.built = True
        self._batch = input_shape[0]
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
        for op, cell in zip(self.ops, self.cells, strict=True):
            op.kept_states = {state: np.zeros((int(batch), cell.units), np.float32)
                              for state in cell.state_names}

    def reset_state(self):
        """Zero the kept states of a stateful layer (Keras 3's spelling)."""
        for op in self.ops:
            for kept in (op.kept_states or {}).values():
                kept.fill(0.0)

    def reset_states(self):
        self.reset_state()

    @property
    def states(self):
        """A stateful layer's kept states (arrays, flattened over the cells), else None."""
        if self.ops[0].kept_states is None:
            return None
        return [op.kept_states[state] for op, cell in zip(self.ops, self.cells, strict=True)
                for state in cell.state_names]

    # -- call ---------------------------------------------------------------------------------
    def call(self, sequences, initial_state=None, mask=None, training=None):
        if isinstance(mask, (list, tuple)):  # the masks of [sequences, *states]: the first
            mask = mask[0]
        states = [] if initial_state is None else (
            list(initial_state) if isinstance(initial_state, (list, tuple))
            else [initial_state])
        if isinstance(sequences, (list, tuple)):  # Keras 2: [sequences, *initial states]
            sequences, states = sequences[0], [*sequences[1:], *states]
        per_cell = self._states_per_cell(states)
        output, finals = sequences, []
        for op, dropout, cell, initial in zip(self.ops, self.input_dropouts, self.cells,
                                              per_cell, strict=True):
            if dropout is not None:  # one mask per sample and feature, every step
                output = apply(dropout, output)
            if mask is None:
                output = apply(op, [output, *initial])
            else:  # the fused recurrence: a masked step keeps the previous states
                output = apply(self._masked_op(op, cell), [output, *initial, mask])
            if self.return_state:
                finals.append([apply(RecurrentStateOp(f"{op.name}/state_{state}", state,
                                                      cell.units), output)
                               for state in cell.state_names])
        if not self.return_state:
            return output
        if len(finals) == 1:
            return [output, *finals[0]]
        # Keras returns a stack's states per cell: [h, c] for an LSTMCell, h for the others
        return [output, *(cell_states if len(cell_states) > 1 else cell_states[0]
                          for cell_states in finals)]

    def _masked_op(self, op, cell):
        """`op` reading a mask as its last input: made anew from the cell's arguments, with
        op's name (so its weights), direction and kept states."""
        masked = cell.make_op(op.name, op.return_sequences, op.go_backwards, masked=True,
                              zero_output_for_mask=self.zero_output_for_mask)
        masked.flip_output, masked.kept_states = op.flip_output, op.kept_states
        return masked

    def compute_mask(self, inputs, previous_mask):
        """As Keras 3's RNN: a returned sequence keeps the input's mask, a last output and
        the states have none."""
        if isinstance(previous_mask, (list, tuple)):
            previous_mask = previous_mask[0] if previous_mask else None
        output_mask = previous_mask if self.return_sequences else None
        if self.return_state:
            return [output_mask, *(None for _ in self.state_names)]
        return output_mask

    def _states_per_cell(self, states):
        """The initial states as a list per cell: Keras's structure (one entry per cell of a
        stack: [h, c] or h) or all of them in order."""
        counts = [len(cell.state_names) for cell in self.cells]
        if not states:
            return [[] for _ in counts]
        grouped = None
        if self.stacked and len(states) == len(counts):
            grouped = [list(s) if isinstance(s, (list, tuple)) else [s] for s in states]
        if grouped is None or [len(g) for g in grouped] != counts:
            flat = [t for s in states for t in (s if isinstance(s, (list, tuple)) else [s])]
            grouped, start = [], 0
            for count in counts:
                grouped.append(flat[start:start + count])
                start += count
            if start != len(flat):
                grouped = None
        if grouped is None or [len(g) for g in grouped] != counts:
            expected = " and ".join(f"{count} tensor(s) of shape (batch, {cell.units})"
                                    for count, cell in zip(counts, self.cells, strict=True))
            raise ValueError(f"{self.context}: argument initial_state must hold {expected}"
                             f"{' (a list per cell)' if self.stacked else ''}, got "
                             f"{len(states)} entries")
        return grouped

    # -- config -------------------------------------------------------------------------------
    def rnn_config(self):
        """The keys every Keras 3 RNN layer writes, in its order."""
        return {"return_sequences": self.return_sequences, "return_state": self.return_state,
                "go_backwards": self.go_backwards, "stateful": self.stateful,
                "unroll": self.unroll, "zero_output_for_mask": self.zero_output_for_mask}
