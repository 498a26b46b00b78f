"""Bidirectional wrapper (`keras.layers.Bidirectional`).

Two recurrent layers read the same sequence, one left to right, one right to left, and their
outputs are merged. As in Keras 3 the wrapper holds two fresh layers made from the given one's
config ('forward_<name>' and 'backward_<name>' with go_backwards flipped, or the given
`backward_layer`), so the weights are "<wrapper>/forward_lstm/lstm_cell/kernel", ... and
get_weights() lists the forward layer's, then the backward layer's.

Keras flips the backward layer's returned sequence back to input order before merging; that
is the order oneDNN's right-to-left direction writes it in, so no reversal runs at all (see
RecurrentOp's `flip_output`). The merge is kiln's Concatenate / Add / Multiply / Average op.
"""

from ...graph.symbolic import apply
from ...ops.bidirectional_recurrent import BidirectionalRecurrentOp
from ...ops.concatenate import ConcatenateOp
from ...ops.merge import AddOp, AverageOp, MultiplyOp
from .base_layer import Layer
from .rnn import RNN

MERGE_MODES = ("sum", "mul", "ave", "concat", None)
# both directions in one oneDNN primitive where it can (tests turn it off to compare)
ONE_PRIMITIVE = True


class Bidirectional(Layer):
    """Args: layer (an RNN, SimpleRNN, LSTM or GRU), merge_mode ('concat', 'sum', 'mul', 'ave' or
    None: the two outputs as a list), weights (the forward layer's arrays, then the backward
    layer's), backward_layer (a layer to read the sequence backwards instead of a copy of
    `layer`: the same return_sequences, return_state and stateful, the other go_backwards).

    Call: layer(sequences, initial_state=[forward states..., backward states...],
    mask=None). With return_state the output is [output, forward states..., backward
    states...]. A mask (Embedding's mask_zero, Masking) reaches both layers, which then
    return zeros at masked steps of a returned sequence (Keras's zero_output_for_mask).
    """

    supports_masking = True

    def __init__(self, layer, merge_mode="concat", weights=None, backward_layer=None,
                 **kwargs):
        super().__init__(**kwargs)
        for argument, value in (("layer", layer), ("backward_layer", backward_layer)):
            if value is not None and not isinstance(value, RNN):
                raise ValueError(f"{self.context}: argument {argument} must be an RNN, "
                                 f"SimpleRNN, LSTM or GRU layer, got {value!r}")
        if merge_mode not in MERGE_MODES:
            raise ValueError(f"{self.context}: argument merge_mode must be one of "
                             f"{list(MERGE_MODES)}, got {merge_mode!r}")
        self.merge_mode = merge_mode
        self.forward_layer = _copy(layer, f"forward_{_without(layer.name, 'forward_')}")
        if backward_layer is None:
            backward_layer = _copy(layer, f"backward_{_without(layer.name, 'backward_')}",
                                   go_backwards=not layer.go_backwards)
        self.backward_layer = backward_layer
        self._check_pair()
        for part in (self.forward_layer, self.backward_layer):
            # as Keras: a returned sequence is zero at masked steps, whatever the layer said
            part.zero_output_for_mask = part.return_sequences
        self.forward_layer.nest_in(self.name)
        self.backward_layer.nest_in(self.name, flip_output=True)
        self.initial_weights = list(weights) if weights else None
        self.stateful = layer.stateful
        self.return_sequences = layer.return_sequences
        self.return_state = layer.return_state

    def _check_pair(self):
        forward, backward = self.forward_layer, self.backward_layer
        if forward.go_backwards == backward.go_backwards:
            raise ValueError(f"{self.context}: the forward and backward layers must have "
                             "different go_backwards values, got forward_layer.go_backwards="
                             f"{forward.go_backwards}, backward_layer.go_backwards="
                             f"{backward.go_backwards}")
        for attribute in ("stateful", "return_sequences", "return_state"):
            if getattr(forward, attribute) != getattr(backward, attribute):
                raise ValueError(
                    f"{self.context}: the forward and backward layers must have the same "
                    f"{attribute}, got {getattr(forward, attribute)} for the forward layer "
                    f"and {getattr(backward, attribute)} for the backward layer")

    @property
    def states_per_direction(self):
        return len(self.forward_layer.state_names)

    def build(self, input_shape):
        for layer in (self.forward_layer, self.backward_layer):
            if not layer.built:
                layer.build(input_shape)
                layer.built = True
        if self.initial_weights is not None:
            self.set_weights(self.initial_weights)
            self.initial_weights = None
        self.built = True

    def call(self, sequences, initial_state=None, mask=None, training=None):
        if isinstance(sequences, (list, tuple)):  # Keras 2: [sequences, *initial states]
            sequences, initial_state = sequences[0], list(sequences[1:]) or initial_state
        forward_state = backward_state = None
        if initial_state is not None:
            states = list(initial_state)
            if len(states) != 2 * self.states_per_direction:
                raise ValueError(f"{self.context}: argument initial_state must hold "
                                 f"{2 * self.states_per_direction} tensors (the forward "
                                 "layer's states, then the backward layer's), got "
                                 f"{len(states)}")
            half = len(states) // 2
            forward_state, backward_state = states[:half], states[half:]
        if isinstance(mask, (list, tuple)):  # the masks of [sequences, *states]: the first
            mask = mask[0]
        if initial_state is None and mask is None and self._one_primitive():
            return apply(BidirectionalRecurrentOp(self.name, self.forward_layer.op,
                                                  self.backward_layer.op, self.merge_mode),
                         [sequences])
        # a mask: two fused recurrences (oneDNN's joint directions cannot take one)
        forward = self.forward_layer(sequences, initial_state=forward_state, mask=mask)
        backward = self.backward_layer(sequences, initial_state=backward_state, mask=mask)
        states = []
        if self.return_state:
            states = [*forward[1:], *backward[1:]]
            forward, backward = forward[0], backward[0]
        output = self._merge(forward, backward)
        if not self.return_state:
            return output
        return [*output, *states] if self.merge_mode is None else [output, *states]

    def _one_primitive(self):
        """Whether oneDNN's bidirectional directions compute this: 'concat' or 'sum' of two
        layers that differ only in direction, without states returned."""
        forward, backward = self.forward_layer.op, self.backward_layer.op
        if forward is None or backward is None:  # stacked cells: one op per cell
            return False
        return (ONE_PRIMITIVE and self.merge_mode in ("concat", "sum") and not self.stateful
                and not self.return_state and not forward.go_backwards
                and self.forward_layer.input_dropout is None
                and self.backward_layer.input_dropout is None
                and backward.go_backwards and type(self.forward_layer) is type(
                    self.backward_layer)
                and forward.native_activations and forward.recurrent_dropout == 0.0
                and backward.recurrent_dropout == 0.0
                and all(getattr(forward, key) == getattr(backward, key) for key in (
                    "cell", "units", "activation", "recurrent_activation", "use_bias",
                    "return_sequences")))

    def compute_mask(self, inputs, previous_mask):
        """As Keras 3's Bidirectional: a returned sequence keeps the input's mask (one per
        output with merge_mode None), a last output and the states have none."""
        if isinstance(previous_mask, (list, tuple)):
            previous_mask = previous_mask[0] if previous_mask else None
        if self.return_sequences:
            output_mask = [previous_mask] * 2 if self.merge_mode is None else previous_mask
        else:
            output_mask = [None, None] if self.merge_mode is None else None
        if not self.return_state:
            return output_mask
        states = [None] * (2 * self.states_per_direction)
        if isinstance(output_mask, list):
            return output_mask + states
        return [output_mask, *states]

    def _merge(self, forward, backward):
        name = f"{self.name}/merge"
        if self.merge_mode is None:
            return [forward, backward]
        if self.merge_mode == "concat":
            return apply(ConcatenateOp(name, len(forward.shape) - 1), [forward, backward])
        op = {"sum": AddOp, "mul": MultiplyOp, "ave": AverageOp}[self.merge_mode]
        return apply(op(name), [forward, backward])

    def reset_states(self):
        self.reset_state()

    def reset_state(self):
        if not self.stateful:
            raise AttributeError("Layer must be stateful.")
        self.forward_layer.reset_state()
        self.backward_layer.reset_state()

    def get_config(self):
        from ..saving.serialization import serialize_keras_object

        return {**super().get_config(), "merge_mode": self.merge_mode,
                "layer": serialize_keras_object(self.forward_layer),
                "backward_layer": serialize_keras_object(self.backward_layer)}

    @classmethod
    def from_config(cls, config, custom_objects=None):
        from ..saving.serialization import deserialize_keras_object

        config = dict(config)
        config["layer"] = deserialize_keras_object(config["layer"],
                                                   custom_objects=custom_objects)
        backward = config.pop("backward_layer", None)
        if backward is not None:
            config["backward_layer"] = deserialize_keras_object(
                backward, custom_objects=custom_objects)
        return cls(**config)


def _without(name, prefix):
    return name[len(prefix):] if name.startswith(prefix) else name


def _copy(layer, name, **changes):
    """A fresh layer of `layer`'s config (no weights carried over), renamed."""
    return type(layer).from_config({**layer.get_config(), "name": name, **changes})
