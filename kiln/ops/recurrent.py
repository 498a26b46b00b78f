"""Recurrent layers (Keras SimpleRNN, LSTM, GRU) as one oneDNN RNN primitive each way: the
whole sequence in one call, forward and backward (backward-data and backward-weights are one
RNN backward primitive), never a loop over time steps here.

Inputs: the sequence x (N, T, C), then optionally the initial states (N, units): h, and c for
an LSTM. Output: the sequence (N, T, units) with `return_sequences`, else the last state h
(N, units). With `return_state` the final states are other tensors of the graph:
`RecurrentStateOp` nodes read them from this op's output (recurrent_state.py).

Layouts: kiln's (N, T, C) bytes are oneDNN's `ntc` layer tensors (logical (T, N, C)); an
(N, units) state is `ldnc` (1, 1, N, units). Keras's kernels (I, G * units) are `ldigo`
(1, 1, I, G, units) in gate order i, f, c, o (LSTM) / z, r, h (GRU: oneDNN's u, r, o), and a
bias (G * units,) is `ldgo`; the primitives read weights in layouts of their own choice
(`format_tag any`), reordered from the stored ones by the plan's parameter views, and write
their gradients in ldigo. A GRU with `reset_after=True` is oneDNN's linear-before-reset GRU:
its Keras bias (2, 3 * units) is folded into the primitive's (4, units) once per step
(recurrent_kernels.py), and the gradient unfolded.

`go_backwards` runs right to left; oneDNN then aligns outputs with inputs, Keras returns them
in processing order, so a returned sequence (and its gradient) is reversed in time.

Under a bf16 inference plan on a CPU with native bf16 the primitive runs in bf16 (sequences,
h and the weights; the cell state c and the bias in f32; training plans too with
recurrent_cells.BF16_TRAINING, every gradient then f32), except for the shapes
oneDNN 3.2's AMX kernels cannot run (recurrent_cells.amx_k_tails) and stateful layers,
which run it in f32 between two conversions (see docs/recurrent.md).

What the primitives cannot express (a Keras mask: an op made with `masked=True` reads it as
its last input; recurrent dropout in training; activations the cells lack) the same op plans
on the fused numba recurrence instead (recurrent_fused.py): `uses_fused_kernel` chooses per plan.
"""

from dataclasses import dataclass

import numpy as np

from ..binding import constants as dnnl
from ..binding.descriptor import descriptor
from ..binding.library import cpu_has
from ..binding.memory import MemoryDesc
from . import recurrent_cells
from . import recurrent_kernels as kernels
from .base import Op
from .recurrent_activations import ACTIVATION_CODES
from .recurrent_cells import (
    F32,
    LBR_GRU,
    TENSORS,
    VANILLA_ACTIVATIONS,
    VANILLA_RNN,
    WEIGHTS,
    amx_k_tails,
    plain_desc,
    sequence_view,
    state_view,
)
from .recurrent_fused import plan_fused
from .recurrent_state import RecurrentTensor


@dataclass
class Planned:
    """What forward planned and backward reads: the primitive's tensors (`memories`, by the
    names of TENSORS, weights left out), their descriptors, the forward primitive and its
    workspace, the output tensor (with its states' gradients), weight names, and which inputs
    need a gradient."""

    memories: dict
    descs: dict
    fwd: object
    workspace: object
    result: RecurrentTensor
    names: dict
    need_input_grad: list
    shapes: str


class RecurrentOp(Op):
    """Args:
        name: the layer's name; weights: the prefix of its weight names (Keras keeps them
            in a cell: "<layer>/lstm_cell"), read as "<weights>/kernel", ...
        cell: VANILLA_RNN, LSTM, GRU or LBR_GRU; units: the state size.
        activation, recurrent_activation: Keras's names; oneDNN's cells compute tanh and
            sigmoid (the vanilla cell: tanh, relu, sigmoid, linear), the fused kernel any of
            recurrent_activations.ACTIVATION_CODES.
        use_bias, return_sequences, go_backwards, recurrent_dropout, seed: as Keras's.
        flip_output: a returned sequence in the other time order (Bidirectional flips its
            backward layer's output back to input order: with go_backwards none is made).
    """

    arity = None

    def __init__(self, name, cell, units, activation="tanh", use_bias=True,
                 return_sequences=False, go_backwards=False, weights=None, flip_output=False,
                 recurrent_activation="sigmoid", recurrent_dropout=0.0, seed=None,
                 masked=False, zero_output_for_mask=False):
        self.name = name
        self.cell = cell
        self.units = int(units)
        self.activation = activation
        self.recurrent_activation = recurrent_activation
        self.use_bias = use_bias
        self.return_sequences = return_sequences
        self.go_backwards = go_backwards
        self.weights = weights or name
        self.flip_output = bool(flip_output)
        self.recurrent_dropout = float(recurrent_dropout)
        seed = np.random.randint(0, 2**62) if seed is None else seed
        self.dropout_counter = np.array([int(seed) % 2**64, 0], dtype=np.uint64)
        # masked: an (N, T) mask is the last input (recurrent_fused.py): a masked step keeps
        # the previous states; its output is the previous one, or zeros with
        # zero_output_for_mask (Keras 3's rnn)
        self.masked = bool(masked)
        self.zero_output_for_mask = bool(zero_output_for_mask)
        # stateful: {'h', 'c'} -> (N, units) arrays the layer keeps between batches
        self.kept_states = None
        for argument, value in (("activation", activation),
                                ("recurrent_activation", recurrent_activation)):
            if value not in ACTIVATION_CODES:
                raise ValueError(f"RNN '{name}': argument {argument} must be one of "
                                 f"{sorted(ACTIVATION_CODES)}, got {value!r}")

    @property
    def native_activations(self):
        """Whether oneDNN's cell computes this op's activations."""
        if self.cell is VANILLA_RNN:
            return self.activation in VANILLA_ACTIVATIONS
        return (self.activation, self.recurrent_activation) == ("tanh", "sigmoid")

    def uses_fused_kernel(self, builder):
        """Whether the plan runs the fused numba recurrence instead of oneDNN's primitive:
        for a mask, recurrent dropout in training, or activations the cell lacks."""
        dropout = builder.training and 0.0 < self.recurrent_dropout < 1.0
        return self.masked or dropout or not self.native_activations

    @property
    def direction(self):
        return (dnnl.unidirectional_right2left if self.go_backwards
                else dnnl.unidirectional_left2right)

    @property
    def reverses_sequence(self):
        """Whether the returned sequence is oneDNN's (aligned with the input) reversed in time:
        Keras's go_backwards order, unless flipped back."""
        return self.go_backwards != self.flip_output

    @property
    def states(self):
        return ("h", "c") if self.cell.cell_state else ("h",)

    def _check(self, input_dims):
        x = input_dims[0]
        if len(x) != 3:
            raise ValueError(f"RNN '{self.name}': expected a 3D input (batch, timesteps, "
                             f"features), got dims {tuple(x)}")
        if self.masked and len(input_dims) > 1:  # parameter_dims passes x alone
            mask = input_dims[-1]
            if tuple(mask) != tuple(x[:2]):
                raise ValueError(f"RNN '{self.name}': the mask must have shape (batch, "
                                 f"timesteps) = {tuple(x[:2])}, got {tuple(mask)}")
            input_dims = input_dims[:-1]
        if len(input_dims) not in (1, 1 + len(self.states)):
            raise ValueError(f"RNN '{self.name}': initial_state must hold "
                             f"{len(self.states)} tensors {list(self.states)}, got "
                             f"{len(input_dims) - 1}")
        for state in input_dims[1:]:
            if tuple(state[1:]) != (self.units,):
                raise ValueError(f"RNN '{self.name}': an initial state must have shape "
                                 f"(batch, {self.units}), got {tuple(state)}")
        return x

    def output_dims(self, input_dims):
        n, t, _ = self._check(input_dims)
        return (n, t, self.units) if self.return_sequences else (n, self.units)

    def parameter_dims(self, input_dims):
        _, _, c = self._check(input_dims)
        gates, units = self.cell.gates, self.units
        dims = {"kernel": ((1, 1, c, gates, units), dnnl.ldigo),
                "recurrent_kernel": ((1, 1, units, gates, units), dnnl.ldigo)}
        if self.use_bias:
            dims["bias"] = (((2, 3 * units), dnnl.ab) if self.cell is LBR_GRU
                            else ((1, 1, gates, units), dnnl.ldgo))
        return dims

    def parameter_names(self, input_dims):
        return [f"{self.weights}/{short}" for short in self.parameter_dims(input_dims)]

    # -- primitive descriptors ----------------------------------------------------------------
    def _descriptor(self, what, shapes, prop_kind, descs, diff_descs=None, hint=None):
        """(key, make) of the forward or backward primitive: prop kind, (the vanilla cell's
        activation,) direction, the tensors (and their gradients') in the header's order (an
        LSTM's peephole and projection weights absent), flags (, alpha, beta), (hint)."""
        def ordered(table):
            names = [k for k in TENSORS if self.cell.cell_state or not k.endswith("_c")]
            tensors = [table.get(k) for k in names]
            if self.cell.cell_state:  # peephole and projection weights, after weights_iter
                tensors[5:5] = [None, None]
            return tensors

        direction = self.direction
        vanilla = self.cell is VANILLA_RNN
        algorithm, alpha = VANILLA_ACTIVATIONS.get(self.activation, (None, 0.0))
        head = (prop_kind, algorithm, direction) if vanilla else (prop_kind, direction)
        tensors, flags = ordered(descs), dnnl.rnn_flags_undef
        if diff_descs is not None:  # backward writes the weights' gradients, never adds
            tensors, flags = tensors + ordered(diff_descs), dnnl.rnn_flags_diff_weights_overwrite
        tail = (flags, alpha, 0.0) if vanilla else (flags,)
        hints = () if hint is None else (hint.pd,)
        return descriptor(self.cell.create_function(what), f"{self.cell.primitive} {what}",
                          shapes, *head, *tensors, *tail, *hints)

    def _weights(self, builder, pd, names):
        """The kernels in the layouts the primitive `pd` chose."""
        return {key: builder.param(names[short], pd.md(dnnl.query_exec_arg_md,
                                                       TENSORS[key][0]))
                for key, short in WEIGHTS.items()}

    # -- forward ------------------------------------------------------------------------------
    def forward(self, builder, xs, need_input_grad):
        if self.uses_fused_kernel(builder):
            return plan_fused(self, builder, xs, need_input_grad)
        x, initial = xs[0], xs[1:]
        n, t, c = x.dims
        units, cell = self.units, self.cell
        # a bf16 plan runs the primitive in bf16 (sequences, h and the weights; the cell
        # state c, the bias and every gradient stay f32, as oneDNN's bf16 RNNs take them)
        dt = self._data_type(builder, c)
        shapes = (f"RNN '{self.name}' ({cell.primitive}) input {list(x.dims)} units {units}"
                  + (" bf16" if dt != F32 else ""))
        names = dict(zip(("kernel", "recurrent_kernel", "bias"),
                         self.parameter_names([x.dims]), strict=False))
        memories = {"src_layer": sequence_view(builder.reorder(x.memory, plain_desc((n, t, c), dt),
                                                           f"{self.name} input"))}
        for state, tensor in zip(self.states, initial, strict=False):
            memories["src_iter" + ("_c" if state == "c" else "")] = state_view(builder.reorder(
                tensor.memory, plain_desc((n, units), F32 if state == "c" else dt),
                f"{self.name} initial state {state}"))
        if self.kept_states is not None and not initial:
            self._read_kept_states(builder, memories, n)
        sequence = builder.allocate(plain_desc((n, t, units), dt))
        finals = {state: builder.keep(builder.allocate(
                      plain_desc((n, units), F32 if state == "c" else dt)))
                  for state in self.states}
        memories["dst_layer"] = sequence_view(sequence)
        for state, final in finals.items():
            memories["dst_iter" + ("_c" if state == "c" else "")] = state_view(final)
        descs = {key: memory.desc for key, memory in memories.items()}
        descs["weights_layer"] = MemoryDesc.any((1, 1, c, cell.gates, units), dt)
        descs["weights_iter"] = MemoryDesc.any((1, 1, units, cell.gates, units), dt)
        # oneDNN 3.2's CPU RNNs refuse a missing bias ('unimplemented'): without use_bias
        # they read zeros of their own
        descs["bias"] = MemoryDesc.with_tag((1, 1, cell.bias_gates, units), F32, dnnl.ldgo)
        memories["bias"] = self._bias(builder, names.get("bias"), descs["bias"])
        fwd = builder.primitive(*self._descriptor("forward", shapes, builder.prop_kind, descs))
        args = {TENSORS[key][0]: memory for key, memory in
                {**memories, **self._weights(builder, fwd.pd, names)}.items()}
        workspace = None
        if builder.training:
            workspace = args[dnnl.ARG_WORKSPACE] = builder.allocate(
                fwd.pd.md(dnnl.query_workspace_md))
        builder.add_forward(builder.bind(fwd, args, f"{self.name} forward"))
        if self.kept_states is not None:  # the next batch starts from these states
            for state, final in finals.items():
                builder.add_forward(builder.memory_kernel(
                    kernels.copy_state, (final, self.kept_states[state].reshape(-1)),
                    f"{self.name} final state {state} kept"))

        output = finals["h"]
        if self.return_sequences:
            output = sequence
            if self.reverses_sequence:
                output = self._reversed(builder, builder.reorder(
                                            sequence, plain_desc((n, t, units)),
                                            f"{self.name} output to f32 for the reversal"),
                                        builder.add_forward,
                                        f"{self.name} output in processing order")
        if output.desc.data_type != builder.data_type:  # a bf16 plan: one conversion
            output = builder.reorder(output, MemoryDesc.with_tag(output.desc.dims,
                                                                 builder.data_type),
                                     f"{self.name} output to the plan's data type")
        result = RecurrentTensor(output, x.data_format, states=finals)
        planned = Planned(memories, descs, fwd, workspace, result, names,
                          list(need_input_grad), shapes)
        return result, lambda grad: self._backward(builder, grad, planned)

    def _data_type(self, builder, channels):
        """The primitive's data type: the plan's, except that training plans keep it in f32
        (recurrent_cells.BF16_TRAINING), a stateful layer's kept states (f32 arrays copied
        in and out) keep it in f32, and so do CPUs without native bf16
        (a test may plan bf16 anywhere) and the shapes whose bf16 AMX kernels crash in
        oneDNN 3.2 (amx_k_tails)."""
        if (builder.data_type != F32 and self.kept_states is None
                and (recurrent_cells.BF16_TRAINING or not builder.training)
                and cpu_has(dnnl.cpu_isa_avx512_core_bf16)
                and not amx_k_tails(channels, self.units)):
            return builder.data_type
        return F32

    def _read_kept_states(self, builder, memories, n):
        """stateful: the initial states are the layer's kept ones, copied in each step."""
        batch = self.kept_states["h"].shape[0]
        if n != batch:
            raise ValueError(f"RNN '{self.name}': if an RNN is stateful, the batch size of the "
                             f"input sequences must be the same as the batch size of the "
                             f"initial state. Expected batch size: {batch}, received batch "
                             f"size: {n}")
        for state, kept in self.kept_states.items():
            memory = builder.allocate(plain_desc((n, self.units)))
            builder.add_forward(builder.memory_kernel(
                kernels.copy_state, (kept.reshape(-1), memory),
                f"{self.name} kept state {state} read"))
            memories["src_iter" + ("_c" if state == "c" else "")] = state_view(memory)

    def _bias(self, builder, name, desc):
        """The primitive's bias: the stored one, a reset_after GRU's folded once a step, or
        zeros (use_bias=False: bytes of its own, never written)."""
        if not self.use_bias:
            return builder.keep(builder.allocate(desc))
        if self.cell is not LBR_GRU:
            return builder.param(name, desc)
        keras_bias = builder.param(name, plain_desc((2, 3 * self.units)))
        folded = builder.allocate(desc)
        builder.add_forward(builder.memory_kernel(
            kernels.fold_reset_after_bias, (keras_bias, folded, self.units),
            f"{self.name} bias folded for the linear-before-reset GRU"))
        return folded

    def _reversed(self, builder, memory, add, label):
        """A plain (N, T, C) buffer reversed in time, by a call planned with `add`."""
        target = builder.allocate(memory.desc)
        add(builder.memory_kernel(kernels.reverse_time, (memory, target, *memory.desc.dims),
                                  label))
        return target

    # -- backward -----------------------------------------------------------------------------
    def _output_grads(self, builder, grad, planned):
        """The gradients of dst_layer, dst_iter (and dst_iter_c): from the op's output and
        from the state nodes (recurrent_state.py); zeros where none arrives."""
        t, n, _ = planned.memories["src_layer"].desc.dims
        units = self.units

        def zeros(dims):  # its own bytes, never written
            memory = builder.keep(builder.allocate(plain_desc(dims)))
            builder.share(memory)
            return memory

        def as_plain(memory, dims, what):
            return builder.reorder(memory, plain_desc(dims), f"{self.name} {what} gradient",
                                   backward=True)

        pending = planned.result.state_grads
        state_grads = {state: [pending[state]] if state in pending else []
                       for state in self.states}
        if self.return_sequences:
            sequence_grad = as_plain(grad, (n, t, units), "output")
            if self.reverses_sequence:
                sequence_grad = self._reversed(builder, sequence_grad, builder.add_backward,
                                               f"{self.name} output gradient in input order")
        else:  # the output is the final h
            sequence_grad = zeros((n, t, units))
            state_grads["h"].insert(0, grad)
        grads = {"dst_layer": sequence_view(sequence_grad)}
        for state, parts in state_grads.items():
            parts = [as_plain(g, (n, units), f"final state {state}") for g in parts]
            if not parts:
                total = zeros((n, units))
            elif len(parts) == 1:
                total = parts[0]
            else:  # return_sequences=False and return_state: the output is the state h
                total = builder.allocate(plain_desc((n, units)))
                builder.add_sum(total, parts, f"{self.name} final state {state} gradients")
            grads["dst_iter" + ("_c" if state == "c" else "")] = state_view(total)
        return grads

    def _backward(self, builder, grad, planned):
        memories, descs, names = planned.memories, planned.descs, planned.names
        t, n, c = memories["src_layer"].desc.dims
        grads = self._output_grads(builder, grad, planned)
        input_grads = {"src_layer": builder.allocate(plain_desc((n, t, c)))}
        grads["src_layer"] = sequence_view(input_grads["src_layer"])
        for key in ("src_iter", "src_iter_c"):
            if key in memories:
                input_grads[key] = builder.allocate(plain_desc((n, self.units)))
                grads[key] = state_view(input_grads[key])
        diff_descs = {key: memory.desc for key, memory in grads.items()}
        diff_descs.update({key: MemoryDesc.any(descs[key].dims, F32) for key in WEIGHTS})
        diff_descs["bias"] = descs["bias"]
        bwd = builder.primitive(*self._descriptor("backward", planned.shapes, dnnl.backward,
                                                  descs, diff_descs, planned.fwd))

        def weight_grad(key):
            desc = bwd.pd.md(dnnl.query_exec_arg_md, TENSORS[key][1])
            if builder.wants_grad(names[WEIGHTS[key]]):
                return builder.param_grad(names[WEIGHTS[key]], desc)
            return builder.allocate(desc)  # the primitive computes it anyway

        grads.update({key: weight_grad(key) for key in WEIGHTS})
        grads["bias"], unfold = self._bias_grad(builder, names.get("bias"), descs["bias"])
        args = {TENSORS[key][0]: memory for key, memory in
                {**memories, **self._weights(builder, bwd.pd, names)}.items()}
        args.update({TENSORS[key][1]: memory for key, memory in grads.items()})
        args[dnnl.ARG_WORKSPACE] = planned.workspace
        builder.add_backward(builder.bind(bwd, args, f"{self.name} backward"))
        if unfold is not None:
            builder.add_backward(unfold)
        keys = ("src_layer", "src_iter", "src_iter_c")[:len(planned.need_input_grad)]
        return [input_grads[key] if need else None
                for key, need in zip(keys, planned.need_input_grad, strict=True)]

    def _bias_grad(self, builder, name, desc):
        """(the primitive's bias gradient, the call unfolding it after the primitive (a
        reset_after GRU's) or None)."""
        wanted = self.use_bias and builder.wants_grad(name)
        if not wanted:
            return builder.allocate(desc), None  # the primitive computes it anyway
        if self.cell is not LBR_GRU:
            return builder.param_grad(name, desc), None
        folded = builder.allocate(desc)
        keras_grad = builder.param_grad(name, plain_desc((2, 3 * self.units)))
        return folded, builder.memory_kernel(
            kernels.unfold_reset_after_bias, (folded, keras_grad, self.units),
            f"{self.name} bias gradient unfolded for Keras's two biases")
