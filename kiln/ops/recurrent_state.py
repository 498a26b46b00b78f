"""The final states of a recurrent layer as tensors of their own (Keras's `return_state`).

A graph node has one output, so a RecurrentOp's output tensor carries its final states
(RecurrentTensor) and a RecurrentStateOp node per state reads one. Backward runs the state
nodes first (they consume the recurrent op's output): each hands its gradient to the tensor,
where the recurrent op's backward takes it as the gradient of dst_iter / dst_iter_c. The first
also gives the recurrent output a zero gradient, so that backward runs even when nothing else
reads that output.
"""

from dataclasses import dataclass, field

from ..binding import constants as dnnl
from ..binding.memory import MemoryDesc
from .base import Op
from .tensor import Tensor


@dataclass
class RecurrentTensor(Tensor):
    """The op's output, with the final states for RecurrentStateOp: `states` {'h', 'c'} ->
    Memory (N, units); `state_grads` the gradients its state nodes planned, read by the
    op's backward (which runs after theirs)."""

    states: dict = field(default_factory=dict)
    state_grads: dict = field(default_factory=dict)
    zero_grad_handed: bool = False


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
        if builder.data_type != dnnl.f32:
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
