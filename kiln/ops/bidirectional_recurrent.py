"""Keras's Bidirectional with merge_mode 'concat' or 'sum' over two matching recurrent layers
as one oneDNN RNN primitive each way: the directions `bidirectional_concat` /
`bidirectional_sum` run both layers over the sequence in one call (and their backward in one).

oneDNN's weights then have D = 2: (1, 2, I, G, units) in ldigo is the forward layer's kernel
followed by the backward layer's, so a numba pass joins the two layers' stored weights (and
biases) once per step, and splits the joined gradients back. Its right-to-left direction
writes the backward layer's outputs aligned with the input, which is the order Keras flips
the backward layer's sequence back into before merging; the sequence is concatenated
(forward units first) or summed by the primitive itself. Without return_sequences Keras
merges the two final h: one numba pass reads them from dst_iter (2, N, units).

Input: the sequence x only (initial states and return_state take two RecurrentOps, see
keras/layers/bidirectional.py).
"""

from ..binding import constants as dnnl
from ..binding.memory import MemoryDesc
from . import recurrent_kernels as kernels
from .recurrent import RecurrentOp
from .recurrent_cells import F32, TENSORS, WEIGHTS, plain_desc, sequence_view
from .tensor import Tensor


def _ldnc(memory):
    """A plain (2, N, units) buffer as oneDNN's two-direction state (1, 2, N, units)."""
    return memory.view(MemoryDesc.with_tag((1, *memory.desc.dims), memory.desc.data_type,
                                           dnnl.ldnc))


class BidirectionalRecurrentOp(RecurrentOp):
    """Args: name; forward_op, backward_op: the two layers' RecurrentOps (the same cell,
    units, activation, use_bias and return_sequences; the second reads backwards);
    merge_mode: 'concat' or 'sum'."""

    def __init__(self, name, forward_op, backward_op, merge_mode):
        super().__init__(name, forward_op.cell, forward_op.units, forward_op.activation,
                         forward_op.use_bias, forward_op.return_sequences,
                         weights=forward_op.weights)
        self.backward_weights = backward_op.weights
        if merge_mode not in ("concat", "sum"):
            raise ValueError(f"Bidirectional '{name}': one primitive merges by 'concat' or "
                             f"'sum', got {merge_mode!r}")
        self.concat = merge_mode == "concat"

    @property
    def direction(self):
        return dnnl.bidirectional_concat if self.concat else dnnl.bidirectional_sum

    @property
    def width(self):
        return 2 * self.units if self.concat else self.units

    def output_dims(self, input_dims):
        if len(input_dims) != 1:
            raise ValueError(f"Bidirectional '{self.name}': one primitive reads the sequence "
                             "alone (no initial states)")
        n, t, _ = self._check(input_dims)
        return (n, t, self.width) if self.return_sequences else (n, self.width)

    def parameter_names(self, input_dims):
        shorts = list(self.parameter_dims(input_dims))
        return [f"{prefix}/{short}" for prefix in (self.weights, self.backward_weights)
                for short in shorts]

    def _names(self, input_dims):
        """The two directions' {short name: full name}."""
        shorts = list(self.parameter_dims(input_dims))
        return [{short: f"{prefix}/{short}" for short in shorts}
                for prefix in (self.weights, self.backward_weights)]

    # -- forward ------------------------------------------------------------------------------
    def forward(self, builder, xs, need_input_grad):
        x = xs[0]
        n, t, c = x.dims
        units, cell = self.units, self.cell
        shapes = (f"Bidirectional '{self.name}' ({cell.primitive}) input {list(x.dims)} "
                  f"units {units}")
        names = self._names([x.dims])
        # bf16 as RecurrentOp's (c, bias, gradients f32), for a returned sequence only: the
        # final states of oneDNN 3.2's bf16 bidirectional primitives were 3-8x further from
        # Keras's mixed_bfloat16 results than Keras's own bf16 error (one-direction ones and
        # returned sequences are within it), so without return_sequences it stays f32
        dt = self._data_type(builder, c) if self.return_sequences else F32
        shapes += " bf16" if dt != F32 else ""
        memories = {"src_layer": sequence_view(builder.reorder(x.memory, plain_desc((n, t, c), dt),
                                                           f"{self.name} input"))}
        sequence = builder.allocate(plain_desc((n, t, self.width), dt))
        memories["dst_layer"] = sequence_view(sequence)
        finals = None
        if not self.return_sequences:  # Keras merges the final h of both directions
            finals = builder.keep(builder.allocate(plain_desc((2, n, units), dt)))
            memories["dst_iter"] = _ldnc(finals)
            if cell.cell_state:
                memories["dst_iter_c"] = _ldnc(builder.allocate(plain_desc((2, n, units))))
            if dt != F32:  # the merge kernel reads f32
                finals = builder.reorder(finals, plain_desc((2, n, units)),
                                         f"{self.name} final states to f32")
        descs = {key: memory.desc for key, memory in memories.items()}
        descs["weights_layer"] = MemoryDesc.any((1, 2, c, cell.gates, units), dt)
        descs["weights_iter"] = MemoryDesc.any((1, 2, units, cell.gates, units), dt)
        descs["bias"] = MemoryDesc.with_tag((1, 2, cell.bias_gates, units), F32, dnnl.ldgo)
        fwd = builder.primitive(*self._descriptor("forward", shapes, builder.prop_kind, descs))
        memories["bias"] = self._joined_bias(builder, names, descs["bias"])
        plain_weights = self._joined_weights(builder, names, (c, units))
        weights = self._in_layouts_of(builder, fwd.pd, plain_weights, "forward")
        args = {TENSORS[key][0]: memory for key, memory in {**memories, **weights}.items()}
        workspace = None
        if builder.training:
            workspace = args[dnnl.ARG_WORKSPACE] = builder.allocate(
                fwd.pd.md(dnnl.query_workspace_md))
        builder.add_forward(builder.bind(fwd, args, f"{self.name} forward"))

        output = sequence
        if finals is not None:
            output = builder.allocate(plain_desc((n, self.width)))
            builder.add_forward(builder.memory_kernel(
                kernels.merge_final_states, (finals, output, n, units, self.concat),
                f"{self.name} final states merged"))
        if output.desc.data_type != builder.data_type:  # a bf16 plan: one conversion
            output = builder.reorder(output, MemoryDesc.with_tag(output.desc.dims,
                                                                 builder.data_type),
                                     f"{self.name} output to the plan's data type")
        result = Tensor(output, x.data_format)
        need = list(need_input_grad)
        planned = (memories, plain_weights, descs, fwd, workspace, names, need, shapes)
        return result, lambda grad: self._backward_both(builder, grad, *planned)

    def _joined_weights(self, builder, names, sizes):
        """The two layers' kernels joined into D = 2 plain ldigo buffers, once per step."""
        c, units = sizes
        joined = {}
        for key, short in WEIGHTS.items():
            rows = c if key == "weights_layer" else units
            one = MemoryDesc.with_tag((1, 1, rows, self.cell.gates, units), F32, dnnl.ldigo)
            both = builder.allocate(MemoryDesc.with_tag((1, 2, rows, self.cell.gates, units),
                                                        F32, dnnl.ldigo))
            builder.add_forward(builder.memory_kernel(
                kernels.join_directions,
                (builder.param(names[0][short], one), builder.param(names[1][short], one),
                 both), f"{self.name} {short}s of both directions joined"))
            joined[key] = both
        return joined

    def _in_layouts_of(self, builder, pd, plain_weights, what):
        """The joined kernels in the layouts the primitive `pd` chose."""
        return {key: builder.reorder(plain, pd.md(dnnl.query_exec_arg_md, TENSORS[key][0]),
                                     f"{self.name} {WEIGHTS[key]} to the {what}'s layout")
                for key, plain in plain_weights.items()}

    def _joined_bias(self, builder, names, desc):
        one = MemoryDesc.with_tag((1, 1, *desc.dims[2:]), F32, dnnl.ldgo)
        parts = [self._bias(builder, direction.get("bias"), one) for direction in names]
        both = builder.allocate(desc)
        builder.add_forward(builder.memory_kernel(kernels.join_directions, (*parts, both),
                                                  f"{self.name} biases joined"))
        return both

    # -- backward -----------------------------------------------------------------------------
    def _backward_both(self, builder, grad, memories, plain_weights, descs, fwd, workspace,
                       names, need_input_grad, shapes):
        t, n, c = memories["src_layer"].desc.dims
        units, width = self.units, self.width

        def zeros(dims):  # its own bytes, never written
            memory = builder.keep(builder.allocate(plain_desc(dims)))
            builder.share(memory)
            return memory

        grads = {}
        if self.return_sequences:
            grads["dst_layer"] = sequence_view(builder.reorder(
                grad, plain_desc((n, t, width)), f"{self.name} output gradient", backward=True))
        else:
            grads["dst_layer"] = sequence_view(zeros((n, t, width)))
            states_grad = builder.allocate(plain_desc((2, n, units)))
            plain_grad = builder.reorder(grad, plain_desc((n, width)),
                                         f"{self.name} output gradient", backward=True)
            builder.add_backward(builder.memory_kernel(
                kernels.split_final_states_grad,
                (plain_grad, states_grad, n, units, self.concat),
                f"{self.name} final states' gradients"))
            grads["dst_iter"] = _ldnc(states_grad)
            if self.cell.cell_state:
                grads["dst_iter_c"] = _ldnc(zeros((2, n, units)))
        input_grad = builder.allocate(plain_desc((n, t, c)))
        grads["src_layer"] = sequence_view(input_grad)
        diff_descs = {key: memory.desc for key, memory in grads.items()}
        diff_descs.update({key: MemoryDesc.any(descs[key].dims, F32) for key in WEIGHTS})
        diff_descs["bias"] = descs["bias"]
        bwd = builder.primitive(*self._descriptor("backward", shapes, dnnl.backward,
                                                  descs, diff_descs, fwd))
        weight_grads = {key: builder.allocate(bwd.pd.md(dnnl.query_exec_arg_md,
                                                        TENSORS[key][1]))
                        for key in WEIGHTS}
        bias_grad = builder.allocate(descs["bias"])
        weights = self._in_layouts_of(builder, bwd.pd, plain_weights, "backward")
        args = {TENSORS[key][0]: memory for key, memory in {**memories, **weights}.items()}
        args.update({TENSORS[key][1]: memory for key, memory in grads.items()})
        args.update({TENSORS[key][1]: memory for key, memory in weight_grads.items()})
        args[dnnl.ARG_DIFF_BIAS] = bias_grad
        args[dnnl.ARG_WORKSPACE] = workspace
        builder.add_backward(builder.bind(bwd, args, f"{self.name} backward"))
        self._split_grads(builder, weight_grads, bias_grad, names)
        return [input_grad if need_input_grad[0] else None]

    def _split_grads(self, builder, weight_grads, bias_grad, names):
        """The joined gradients back into each layer's weights (ldigo, Keras's layout)."""
        def target(name, desc):
            if builder.wants_grad(name):
                return builder.param_grad(name, desc)
            return builder.allocate(desc)  # split anyway: one kernel for both

        for key, joined in weight_grads.items():
            dims = joined.desc.dims
            plain = builder.reorder(joined, MemoryDesc.with_tag(dims, F32, dnnl.ldigo),
                                    f"{self.name} {WEIGHTS[key]} gradient to ldigo",
                                    backward=True)
            one = MemoryDesc.with_tag((1, 1, *dims[2:]), F32, dnnl.ldigo)
            short = WEIGHTS[key]
            builder.add_backward(builder.memory_kernel(
                kernels.split_directions,
                (plain, target(names[0][short], one), target(names[1][short], one)),
                f"{self.name} {short} gradient split between the directions"))
        one = MemoryDesc.with_tag((1, 1, *bias_grad.desc.dims[2:]), F32, dnnl.ldgo)
        parts = [self._bias_grad(builder, direction.get("bias"), one) for direction in names]
        builder.add_backward(builder.memory_kernel(
            kernels.split_directions, (bias_grad, parts[0][0], parts[1][0]),
            f"{self.name} bias gradient split between the directions"))
        for _, unfold in parts:
            if unfold is not None:
                builder.add_backward(unfold)
