"""Recurrent layers (Keras SimpleRNN, LSTM, GRU) as one oneDNN RNN primitive each way: the
whole sequence in one call, forward and backward (backward-data and backward-weights are one
RNN backward primitive), never a loop over time steps here.

Inputs: the sequence x (N, T, C), then optionally the initial states (N, units): h, and c for
an LSTM. Output: the sequence (N, T, units) with `return_sequences`, else the last state h
(N, units). With `return_state` the final states are other tensors of the graph:
`RecurrentStateOp` nodes read them from this op's output (a node has one output).

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

The primitives run in f32: under a bf16 plan the op converts its input and output at its
edges (a native bf16 RNN needs avx512_bf16 / AMX, see docs/recurrent.md).
"""

from dataclasses import dataclass, field

from ..binding import constants as dnnl
from ..binding.descriptor import descriptor
from ..binding.memory import MemoryDesc
from . import recurrent_kernels as kernels
from .base import Op
from .tensor import Tensor

F32 = dnnl.f32


@dataclass(frozen=True)
class Cell:
    """One of oneDNN's RNN cells: its C name, gates, bias rows and whether it has a cell
    state c (LSTM)."""

    primitive: str
    gates: int
    bias_gates: int
    cell_state: bool = False

    def create_function(self, what):
        return f"dnnl_{self.primitive}_{what}_primitive_desc_create"


VANILLA_RNN = Cell("vanilla_rnn", 1, 1)
LSTM = Cell("lstm", 4, 4, cell_state=True)
GRU = Cell("gru", 3, 3)
LBR_GRU = Cell("lbr_gru", 3, 4)  # Keras's reset_after=True

# SimpleRNN activations oneDNN's vanilla cell computes
VANILLA_ACTIVATIONS = {"tanh": dnnl.eltwise_tanh, "relu": dnnl.eltwise_relu,
                       "sigmoid": dnnl.eltwise_logistic}

LAYER_TENSORS = ("src_layer", "src_iter", "src_iter_c", "weights_layer", "weights_iter",
                 "bias", "dst_layer", "dst_iter", "dst_iter_c")


@dataclass
class RecurrentTensor(Tensor):
    """The op's output, with the final states for RecurrentStateOp: `states` {'h', 'c'} ->
    Memory (N, units); `state_grads` the gradients its state nodes planned, read by the
    op's backward (which runs after theirs)."""

    states: dict = field(default_factory=dict)
    state_grads: dict = field(default_factory=dict)
    zero_grad_handed: bool = False


def _plain(dims):
    return MemoryDesc.with_tag(dims, F32)


def _sequence(n, t, c):
    """A plain (N, T, C) buffer as oneDNN's layer tensor: logical (T, N, C) in ntc."""
    return MemoryDesc.with_tag((t, n, c), F32, dnnl.ntc)


def _state(n, units):
    return MemoryDesc.with_tag((1, 1, n, units), F32, dnnl.ldnc)


class RecurrentOp(Op):
    """Args:
        name: the layer's name; weights: the prefix of its weight names (Keras keeps them
            in a cell: "<layer>/lstm_cell"), read as "<weights>/kernel", ...
        cell: VANILLA_RNN, LSTM, GRU or LBR_GRU; units: the state size.
        activation: the vanilla cell's ('tanh', 'relu', 'sigmoid'); the others are fixed.
        use_bias, return_sequences, go_backwards: as Keras's.
    """

    arity = None

    def __init__(self, name, cell, units, activation="tanh", use_bias=True,
                 return_sequences=False, go_backwards=False, weights=None):
        self.name = name
        self.cell = cell
        self.units = int(units)
        self.activation = activation
        self.use_bias = use_bias
        self.return_sequences = return_sequences
        self.go_backwards = go_backwards
        self.weights = weights or name
        if cell is VANILLA_RNN and activation not in VANILLA_ACTIVATIONS:
            raise ValueError(f"RNN '{name}': argument activation must be one of "
                             f"{sorted(VANILLA_ACTIVATIONS)}, got {activation!r}")

    @property
    def states(self):
        return ("h", "c") if self.cell.cell_state else ("h",)

    def _check(self, input_dims):
        x = input_dims[0]
        if len(x) != 3:
            raise ValueError(f"RNN '{self.name}': expected a 3D input (batch, timesteps, "
                             f"features), got dims {tuple(x)}")
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
    def _arguments(self, descs):
        """The layer's descriptors in the header's order (an LSTM's peephole and projection
        weights are absent: None)."""
        if self.cell.cell_state:
            return [descs.get(k) for k in LAYER_TENSORS[:5]] + [None, None] + [
                descs.get(k) for k in LAYER_TENSORS[5:]]
        return [descs.get(k) for k in LAYER_TENSORS if not k.endswith("_c")]

    def _descriptor(self, what, shapes, prop_kind, descs, diff_descs=None, hint=None):
        direction = (dnnl.unidirectional_right2left if self.go_backwards
                     else dnnl.unidirectional_left2right)
        vanilla = self.cell is VANILLA_RNN
        head = (prop_kind, VANILLA_ACTIVATIONS[self.activation], direction) if vanilla \
            else (prop_kind, direction)
        tensors = self._arguments(descs)
        flags = dnnl.rnn_flags_undef
        if diff_descs is not None:
            tensors += self._arguments(diff_descs)
            flags = dnnl.rnn_flags_diff_weights_overwrite
        tail = (flags, 0.0, 0.0) if vanilla else (flags,)
        hints = () if hint is None else (hint.pd,)
        return descriptor(self.cell.create_function(what), f"{self.cell.primitive} {what}",
                          shapes, *head, *tensors, *tail, *hints)

    # -- forward ------------------------------------------------------------------------------
    def forward(self, builder, xs, need_input_grad):
        x, initial = xs[0], xs[1:]
        n, t, c = x.dims
        units, cell = self.units, self.cell
        shapes = f"{type(self).__name__} '{self.name}' input {list(x.dims)} units {units}"
        names = dict(zip(("kernel", "recurrent_kernel", "bias"),
                         self.parameter_names([x.dims]), strict=False))

        src = builder.reorder(x.memory, _plain((n, t, c)), f"{self.name} input")
        memories = {"src_layer": src.view(_sequence(n, t, c))}
        for state, tensor in zip(self.states, initial, strict=False):
            plain = builder.reorder(tensor.memory, _plain((n, units)),
                                    f"{self.name} initial state {state}")
            memories["src_iter" if state == "h" else "src_iter_c"] = plain.view(_state(n, units))
        sequence = builder.allocate(_plain((n, t, units)))
        finals = {state: builder.keep(builder.allocate(_plain((n, units))))
                  for state in self.states}
        memories["dst_layer"] = sequence.view(_sequence(n, t, units))
        memories["dst_iter"] = finals["h"].view(_state(n, units))
        if cell.cell_state:
            memories["dst_iter_c"] = finals["c"].view(_state(n, units))
        bias_desc = MemoryDesc.with_tag((1, 1, cell.bias_gates, units), F32, dnnl.ldgo)
        descs = {key: memory.desc for key, memory in memories.items()}
        descs["weights_layer"] = MemoryDesc.any((1, 1, c, cell.gates, units), F32)
        descs["weights_iter"] = MemoryDesc.any((1, 1, units, cell.gates, units), F32)
        if self.use_bias:
            descs["bias"] = bias_desc
        fwd = builder.primitive(*self._descriptor("forward", shapes, builder.prop_kind, descs))

        def weights(pd, argument, name):
            return builder.param(name, pd.md(dnnl.query_exec_arg_md, argument))

        args = {dnnl.ARG_SRC_LAYER: memories["src_layer"],
                dnnl.ARG_WEIGHTS_LAYER: weights(fwd.pd, dnnl.ARG_WEIGHTS_LAYER, names["kernel"]),
                dnnl.ARG_WEIGHTS_ITER: weights(fwd.pd, dnnl.ARG_WEIGHTS_ITER,
                                               names["recurrent_kernel"]),
                dnnl.ARG_DST_LAYER: memories["dst_layer"], dnnl.ARG_DST_ITER: memories["dst_iter"]}
        for key, argument in (("src_iter", dnnl.ARG_SRC_ITER),
                              ("src_iter_c", dnnl.ARG_SRC_ITER_C),
                              ("dst_iter_c", dnnl.ARG_DST_ITER_C)):
            if key in memories:
                args[argument] = memories[key]
        if self.use_bias:
            memories["bias"] = args[dnnl.ARG_BIAS] = self._bias(builder, names["bias"],
                                                                bias_desc)
        workspace = None
        if builder.training:
            workspace = builder.allocate(fwd.pd.md(dnnl.query_workspace_md))
            args[dnnl.ARG_WORKSPACE] = workspace
        builder.add_forward(builder.bind(fwd, args, f"{self.name} forward"))

        output = finals["h"]
        if self.return_sequences:
            output = sequence
            if self.go_backwards:
                output = self._reversed(builder, sequence, (n, t, units), builder.add_forward,
                                        f"{self.name} output in processing order")
        output = self._to_data_type(builder, output)
        result = RecurrentTensor(output, x.data_format, states=finals)

        def backward(grad):
            return self._backward(builder, grad, result, memories, descs, fwd, workspace,
                                  names, need_input_grad, shapes)

        return result, backward

    def _bias(self, builder, name, desc):
        """The primitive's bias: the stored one, or a reset_after GRU's folded once a step."""
        if self.cell is not LBR_GRU:
            return builder.param(name, desc)
        keras_bias = builder.param(name, _plain((2, 3 * self.units)))
        folded = builder.allocate(desc)
        builder.add_forward(builder.memory_kernel(
            kernels.fold_reset_after_bias, (keras_bias, folded, self.units),
            f"{self.name} bias folded for the linear-before-reset GRU"))
        return folded

    def _reversed(self, builder, memory, dims, add, label):
        target = builder.allocate(_plain(dims))
        add(builder.memory_kernel(kernels.reverse_time, (memory, target, *dims), label))
        return target

    def _to_data_type(self, builder, memory):
        """The output in the plan's activation type (a bf16 plan: one conversion)."""
        if builder.data_type == F32:
            return memory
        return builder.reorder(memory, MemoryDesc.with_tag(memory.desc.dims, builder.data_type),
                               f"{self.name} output to the plan's data type")

    # -- backward -----------------------------------------------------------------------------
    def _backward(self, builder, grad, result, memories, descs, fwd, workspace, names,
                  need_input_grad, shapes):
        t, n, c = memories["src_layer"].desc.dims
        units = self.units
        pending = result.state_grads

        def zeros(dims):  # a gradient nothing reaches: zeros of its own, never written
            memory = builder.keep(builder.allocate(_plain(dims)))
            builder.share(memory)
            return memory

        def plain(memory, dims, what):
            return builder.reorder(memory, _plain(dims), f"{self.name} {what} gradient",
                                   backward=True)

        state_grads = {state: [pending[state]] if state in pending else []
                       for state in self.states}
        if self.return_sequences:
            sequence_grad = plain(grad, (n, t, units), "output")
            if self.go_backwards:
                sequence_grad = self._reversed(builder, sequence_grad, (n, t, units),
                                               builder.add_backward,
                                               f"{self.name} output gradient in input order")
        else:
            sequence_grad = zeros((n, t, units))
            state_grads["h"].insert(0, grad)
        diff = {"dst_layer": sequence_grad.view(_sequence(n, t, units))}
        for state in self.states:
            parts = [plain(g, (n, units), f"final state {state}") for g in state_grads[state]]
            if not parts:
                total = zeros((n, units))
            elif len(parts) == 1:
                total = parts[0]
            else:
                total = builder.allocate(_plain((n, units)))
                builder.add_sum(total, parts, f"{self.name} final state {state} gradients")
            diff["dst_iter" if state == "h" else "dst_iter_c"] = total.view(_state(n, units))
        input_grads = {"src_layer": builder.allocate(_plain((n, t, c)))}
        diff["src_layer"] = input_grads["src_layer"].view(_sequence(n, t, c))
        for key in ("src_iter", "src_iter_c"):
            if key in memories:
                input_grads[key] = builder.allocate(_plain((n, units)))
                diff[key] = input_grads[key].view(_state(n, units))
        diff_descs = {key: memory.desc for key, memory in diff.items()}
        for key in ("weights_layer", "weights_iter", "bias"):
            if key in descs:
                diff_descs[key] = (descs[key] if key == "bias"
                                   else MemoryDesc.any(descs[key].dims, F32))
        bwd = builder.primitive(*self._descriptor("backward", shapes, dnnl.backward, descs,
                                                  diff_descs, fwd))

        def weight_grad(argument, name):
            desc = bwd.pd.md(dnnl.query_exec_arg_md, argument)
            if builder.wants_grad(name):
                return builder.param_grad(name, desc)
            return builder.allocate(desc)  # computed by the primitive, not kept

        args = {dnnl.ARG_SRC_LAYER: memories["src_layer"],
                dnnl.ARG_DST_LAYER: memories["dst_layer"],
                dnnl.ARG_DST_ITER: memories["dst_iter"],
                dnnl.ARG_WEIGHTS_LAYER: builder.param(names["kernel"], bwd.pd.md(
                    dnnl.query_exec_arg_md, dnnl.ARG_WEIGHTS_LAYER)),
                dnnl.ARG_WEIGHTS_ITER: builder.param(names["recurrent_kernel"], bwd.pd.md(
                    dnnl.query_exec_arg_md, dnnl.ARG_WEIGHTS_ITER)),
                dnnl.ARG_WORKSPACE: workspace,
                dnnl.ARG_DIFF_SRC_LAYER: diff["src_layer"],
                dnnl.ARG_DIFF_DST_LAYER: diff["dst_layer"],
                dnnl.ARG_DIFF_DST_ITER: diff["dst_iter"],
                dnnl.ARG_DIFF_WEIGHTS_LAYER: weight_grad(dnnl.ARG_DIFF_WEIGHTS_LAYER,
                                                         names["kernel"]),
                dnnl.ARG_DIFF_WEIGHTS_ITER: weight_grad(dnnl.ARG_DIFF_WEIGHTS_ITER,
                                                        names["recurrent_kernel"])}
        for key, argument, diff_argument in (
                ("src_iter", dnnl.ARG_SRC_ITER, dnnl.ARG_DIFF_SRC_ITER),
                ("src_iter_c", dnnl.ARG_SRC_ITER_C, dnnl.ARG_DIFF_SRC_ITER_C),
                ("dst_iter_c", dnnl.ARG_DST_ITER_C, dnnl.ARG_DIFF_DST_ITER_C)):
            if key in memories:
                args[argument], args[diff_argument] = memories[key], diff[key]
        if self.use_bias:
            bias_grad = self._bias_grad(builder, names["bias"], descs["bias"])
            args[dnnl.ARG_BIAS] = memories["bias"]
            args[dnnl.ARG_DIFF_BIAS] = bias_grad[0]
        builder.add_backward(builder.bind(bwd, args, f"{self.name} backward"))
        if self.use_bias and bias_grad[1] is not None:
            builder.add_backward(bias_grad[1])
        keys = ("src_layer", "src_iter", "src_iter_c")[:len(need_input_grad)]
        return [input_grads[key] if need else None
                for key, need in zip(keys, need_input_grad, strict=True)]

    def _bias_grad(self, builder, name, desc):
        """(the primitive's bias gradient, a call to plan after it or None)."""
        wanted = builder.wants_grad(name)
        if self.cell is not LBR_GRU:
            return (builder.param_grad(name, desc) if wanted else builder.allocate(desc)), None
        folded = builder.allocate(desc)
        if not wanted:
            return folded, None
        keras_grad = builder.param_grad(name, _plain((2, 3 * self.units)))
        return folded, builder.memory_kernel(
            kernels.unfold_reset_after_bias, (folded, keras_grad, self.units),
            f"{self.name} bias gradient unfolded for Keras's two biases")


class RecurrentStateOp(Op):
    """A final state ('h' or 'c') of a RecurrentOp, read from its output tensor (Keras's
    `return_state`); its gradient is handed to that op's backward.

    Args: name, state: 'h' or 'c', units."""

    def __init__(self, name, state, units):
        self.name = name
        self.state = state
        self.units = units

    def output_dims(self, input_dims):
        return (input_dims[0], self.units)

    def forward(self, builder, x, need_input_grad=True):
        if not isinstance(x, RecurrentTensor):
            raise ValueError(f"state '{self.name}': reads the output of a recurrent layer")
        memory = x.states[self.state]
        if builder.data_type != F32:
            memory = builder.reorder(memory, MemoryDesc.with_tag(memory.desc.dims,
                                                                 builder.data_type),
                                     f"{self.name} to the plan's data type")

        def backward(grad):
            x.state_grads[self.state] = grad
            if x.zero_grad_handed:
                return None
            # the recurrent op's backward runs only if its output has a gradient: the first
            # state node to plan hands it zeros (its own bytes, never written)
            x.zero_grad_handed = True
            zeros = builder.keep(builder.allocate(x.memory.desc))
            builder.share(zeros)
            return zeros

        return Tensor(memory, x.data_format), backward
