"""RecurrentOp's second path: the fused numba recurrence (recurrent_fused_kernels.py) for
what oneDNN's RNN primitives cannot express: Keras masks (a masked step keeps the previous
states), recurrent dropout (a mask on h inside every step; with `dropout` too, an LSTM's or
GRU's input mask per gate: recurrent_gate_dropout.py) and activations their cells lack.
RecurrentOp.forward hands a case here when `op.uses_fused_kernel(builder)` says so; the op's
contract (inputs, weights in Keras's layout, output tensor with its final states, return_state
nodes, stateful kept states) is the same on both paths.

Inputs: x (N, T, C), then the initial states, then the (N, T) mask when `op.masked`. The
weights are read as stored (Keras's layout is the kernel's); the workspace the backward reads
(pre-activations, states, what each recurrent product read) is allocated here, at plan time.
The kernels run in f32: under a bf16 plan the activations are converted at the edges.
"""

import numpy as np

from ..binding import constants as dnnl
from ..binding.memory import MemoryDesc
from . import recurrent_fused_kernels as fused
from .dropout import CHUNK, keep_scratch, keep_threshold
from .recurrent_activations import ACTIVATION_CODES
from .recurrent_gate_dropout import (
    gate_dropout_input_grads,
    gate_dropout_projection,
    gate_dropout_scratch,
)
from .recurrent_kernels import copy_state
from .recurrent_state import RecurrentTensor

F32 = dnnl.f32
CELL_CODES = {"vanilla_rnn": fused.VANILLA, "lstm": fused.LSTM, "gru": fused.GRU,
              "lbr_gru": fused.LBR_GRU}


def _plain(dims):
    return MemoryDesc.with_tag(dims, F32)


def _zeros(size):
    return np.zeros(size, np.float32)


def plan_fused(op, builder, xs, need_input_grad):
    """Plan op's forward on the fused kernel; returns (output tensor, backward)."""
    x = xs[0]
    states_in = xs[1:-1] if op.masked else xs[1:]
    n, t, c = x.dims
    units, gates = op.units, op.cell.gates
    width = gates * units
    names = dict(zip(("kernel", "recurrent_kernel", "bias"), op.parameter_names([x.dims]),
                     strict=False))
    descs = {short: MemoryDesc.with_tag(dims, F32, tag)
             for short, (dims, tag) in op.parameter_dims([x.dims]).items()}
    source = builder.reorder(x.memory, _plain((n, t, c)), f"{op.name} input")
    kernel = builder.param(names["kernel"], descs["kernel"])
    recurrent = builder.param(names["recurrent_kernel"], descs["recurrent_kernel"])
    bias = (builder.param(names["bias"], descs["bias"]) if op.use_bias
            else _zeros(2 * width))
    mask = np.ones(1, np.float32)
    if op.masked:
        mask = builder.reorder(xs[-1].memory, _plain((n, t)), f"{op.name} mask")
    initial = _initial_states(op, builder, states_in, n)
    work = {"proj": _zeros(n * t * width), "pre": _zeros(n * t * width),
            "rec_in": _zeros(n * t * width), "hs": _zeros(n * (t + 1) * units),
            "cs": _zeros(n * (t + 1) * units), "rh": _zeros(n * t * units),
            "acc": _zeros(n * width)}
    dims = (n, t, c, units, gates)
    drop = np.ones(n * width, np.float32)  # ones: no recurrent dropout
    op.recurrent_dropout_mask = drop  # the plan's, read by tests
    if builder.training and 0.0 < op.recurrent_dropout < 1.0:
        builder.add_forward(builder.kernel(
            fused.draw_recurrent_dropout,
            (drop, np.zeros(n * width, np.uint8), keep_threshold(op.recurrent_dropout),
             np.float32(1.0 / (1.0 - op.recurrent_dropout)), op.dropout_counter,
             keep_scratch(CHUNK)), f"{op.name} recurrent dropout mask"))

    gate_masks = _plan_gate_input_dropout(op, builder, source, kernel, bias, work, dims)
    output = builder.allocate(_plain((n, t, units) if op.return_sequences else (n, units)))
    h_last = builder.keep(builder.allocate(_plain((n, units))))
    c_last = (builder.keep(builder.allocate(_plain((n, units)))) if op.cell.cell_state
              else _zeros(n * units))
    options = tuple(int(v) for v in (
        CELL_CODES[op.cell.primitive], ACTIVATION_CODES[op.activation],
        ACTIVATION_CODES[op.recurrent_activation], op.go_backwards, op.reverses_sequence,
        op.return_sequences, op.zero_output_for_mask, op.masked, gate_masks is not None))
    builder.add_forward(builder.memory_kernel(
        fused.recurrent_forward,
        (source, kernel, bias, recurrent, *initial, mask, drop, output, h_last, c_last,
         work["proj"], work["pre"], work["rec_in"], work["hs"], work["cs"], work["rh"],
         work["acc"], dims, options), f"{op.name} fused recurrent forward"))
    finals = {"h": h_last, "c": c_last}
    if op.kept_states is not None:  # the next batch starts from these states
        for state in op.states:
            builder.add_forward(builder.memory_kernel(
                copy_state, (finals[state], op.kept_states[state].reshape(-1)),
                f"{op.name} final state {state} kept"))
    result_memory = output
    if builder.data_type != F32:  # a bf16 plan: one conversion
        result_memory = builder.reorder(output, MemoryDesc.with_tag(
            output.desc.dims, builder.data_type), f"{op.name} output to the plan's data type")
    result = RecurrentTensor(result_memory, x.data_format,
                             states={state: finals[state] for state in op.states})
    saved = dict(source=source, kernel=kernel, recurrent=recurrent, mask=mask, drop=drop,
                 gate_masks=gate_masks, work=work, dims=dims, options=options, names=names,
                 descs=descs, result=result, need=list(need_input_grad), states_in=states_in)
    return result, lambda grad: _backward(op, builder, grad, saved)


def _plan_gate_input_dropout(op, builder, source, kernel, bias, work, dims):
    """In training with op.gate_input_dropout (an LSTM / GRU with `dropout` and
    `recurrent_dropout`, Keras's implementation 1): draw one input mask per gate, (G, N, C),
    and compute the input projection from the masked inputs into work["proj"]; returns
    (masks, scratch), or None (the fused forward then projects the unmasked input)."""
    rate = op.gate_input_dropout
    if not (builder.training and rate > 0.0):
        op.gate_input_dropout_masks = None
        return None
    n, t, c, units, gates = dims
    masks = np.ones(gates * n * c, np.float32)
    op.gate_input_dropout_masks = masks  # the plan's, read by tests
    builder.add_forward(builder.kernel(
        fused.draw_recurrent_dropout,
        (masks, np.zeros(masks.size, np.uint8), keep_threshold(rate),
         np.float32(1.0 / (1.0 - rate)), op.dropout_counter, keep_scratch(CHUNK)),
        f"{op.name} input dropout masks, one per gate"))
    scratch = gate_dropout_scratch(n, t, c, units)
    builder.add_forward(builder.memory_kernel(
        gate_dropout_projection, (source, kernel, bias, masks, work["proj"], scratch, dims),
        f"{op.name} gate-masked input projection"))
    return masks, scratch


def _initial_states(op, builder, states_in, n):
    """(h0, c0): the given states (plain f32), a stateful layer's kept ones, or zeros."""
    if states_in:
        given = [builder.reorder(s.memory, _plain((n, op.units)),
                                 f"{op.name} initial state {state}")
                 for s, state in zip(states_in, op.states, strict=True)]
        return given if len(given) == 2 else [given[0], _zeros(n * op.units)]
    if op.kept_states is not None:
        batch = op.kept_states["h"].shape[0]
        if n != batch:
            raise ValueError(f"RNN '{op.name}': if an RNN is stateful, the batch size of the "
                             f"input sequences must be the same as the batch size of the "
                             f"initial state. Expected batch size: {batch}, received batch "
                             f"size: {n}")
        kept = [op.kept_states[state].reshape(-1) for state in op.states]
        return kept if len(kept) == 2 else [kept[0], _zeros(n * op.units)]
    return [_zeros(n * op.units), _zeros(n * op.units)]


def _backward(op, builder, grad, saved):
    n, t, c, units, gates = saved["dims"]
    width = gates * units
    need, names, descs = saved["need"], saved["names"], saved["descs"]

    def plain(memory, dims, what):
        return builder.reorder(memory, _plain(dims), f"{op.name} {what} gradient",
                               backward=True)

    dy = plain(grad, (n, t, units) if op.return_sequences else (n, units), "output")
    pending = saved["result"].state_grads
    final_grads = [plain(pending[state], (n, units), f"final state {state}")
                   if state in pending else _zeros(n * units) for state in ("h", "c")]
    dx = builder.allocate(_plain((n, t, c))) if need[0] else _zeros(n * t * c)
    state_grads = [builder.allocate(_plain((n, units))) if i < len(saved["states_in"])
                   and need[1 + i] else _zeros(n * units) for i in range(2)]

    def weight_grad(short, size):
        if short in names and builder.wants_grad(names[short]):
            return builder.param_grad(names[short], descs[short])
        return _zeros(size)

    dkernel = weight_grad("kernel", c * width)
    drecurrent = weight_grad("recurrent_kernel", units * width)
    dbias = weight_grad("bias", 2 * width) if op.use_bias else _zeros(2 * width)
    work = saved["work"]
    dz_in = _zeros(n * t * width)  # the input projection's gradient
    gate_masked = saved["gate_masks"] is not None  # then dx, dkernel come after, below
    builder.add_backward(builder.memory_kernel(
        fused.recurrent_backward,
        (saved["source"], saved["kernel"], saved["recurrent"], saved["mask"], saved["drop"],
         dy, *final_grads, *((_zeros(1), _zeros(1)) if gate_masked else (dx, dkernel)),
         drecurrent, dbias, *state_grads, work["pre"],
         work["rec_in"], work["hs"], work["cs"], work["rh"], dz_in, _zeros(n * t * width),
         _zeros(n * 3 * units), saved["dims"], saved["options"], bool(need[0])),
        f"{op.name} fused recurrent backward"))
    if gate_masked:  # dx and dkernel from the gate-masked inputs
        masks, scratch = saved["gate_masks"]
        builder.add_backward(builder.memory_kernel(
            gate_dropout_input_grads,
            (saved["source"], saved["kernel"], masks, dz_in, dx, dkernel, scratch,
             saved["dims"], bool(need[0])), f"{op.name} gate-masked input gradients"))
    grads = [dx if need[0] else None]
    grads += [state_grads[i] if need[1 + i] else None
              for i in range(len(saved["states_in"]))]
    if op.masked:
        grads.append(None)  # a mask has no gradient
    return grads
