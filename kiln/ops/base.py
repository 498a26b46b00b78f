"""The op contract: what every op offers the graph and the plan.

An op is a shape rule plus a forward and a backward planned onto oneDNN primitives (numba
kernels where oneDNN has none), side by side in one module:

    arity                     1 for ops of one input; None for ops of any number (merge ops)
    output_dims(dims)         logical output dims (N, C, H, W) or (N, F); for arity None
                              `dims` is a list, one entry per input
    parameter_dims(dims)      {short name: (logical dims, tag of the Keras layout)} of the
                              trainable weights; the plan names them "<op name>/<short name>"
    parameter_names(dims)     the full names of those weights (an op fused from two layers'
                              ops reads weights of both)
    state_dims(dims)          the same for non-trainable state the step updates
                              (BatchNormalization's moving statistics)
    reads_integers            True for an op that reads a model input of integers as they
                              are (EmbeddingOp's token ids, an s32 memory); any other op
                              reading such an input gets it converted to the activation type
                              once, as Keras casts an int input to a layer's compute dtype
    per_image                 True when the plan may run the op in sub-batches of the batch
                              (plan/sub_batches.py reads only this): the op takes one input,
                              treats each image alone, and has been checked to plan and train
                              the same in sub-batches. An op that treats images alone but was
                              never planned so says False (ChannelAffineOp, BroadcastBinaryOp).
    forward(builder, x, need_input_grad)
                              plans the forward calls and returns (output Tensor, backward);
                              for arity None, `x` is a list of Tensors and `need_input_grad`
                              a list of bools
    backward(output_grad)     plans the backward calls: output_grad is a Memory in any layout;
                              returns the input gradient Memory (None when not needed); for
                              arity None, a list with one Memory or None per input

An op plans through the `builder` it is handed, and only through the members of the Builder
protocol below (tests/ops/test_builder_contract.py keeps the two in step). An op may write its
input-gradient result into `output_grad` in place only when `builder.writable(output_grad)`
says so: the plan hands one gradient buffer to several consumers at a fan-out. It asks
`builder.wants_grad(name)` before computing a weight gradient: frozen weights
(trainable=False) get none.
"""

from collections.abc import Callable, Hashable, Iterable
from typing import Any, Protocol


class Op:
    """Defaults for the optional parts of the contract."""

    arity = 1
    per_image = False
    reads_integers = False
    name = "op"

    def parameter_dims(self, input_dims):
        return {}

    def parameter_names(self, input_dims):
        return [f"{self.name}/{short}" for short in self.parameter_dims(input_dims)]

    def state_dims(self, input_dims):
        return {}


class Builder(Protocol):
    """What an op may use of the plan being built (kiln.plan.builder.PlanBuilder is the one
    implementation). Every member an op reads is here; tests/ops/test_builder_contract.py
    checks that statically. Memory is kiln.binding.memory.Memory, MemoryDesc its descriptor.
    """

    # -- what kind of plan ------------------------------------------------------------------
    training: bool
    """Whether the plan trains: forward_training primitives, backward calls planned."""
    data_type: int
    """oneDNN data type of activations: dnnl.f32, or dnnl.bf16 under mixed precision."""
    prop_kind: int
    """dnnl.forward_training or dnnl.forward_inference, as `training` says."""
    parameters: Any
    """The model's ParameterStore. Ops read `grad_memory(name)` (a gradient's stored layout)
    and `value_memory(name, desc)` (a value without the per-step reorder param() plans);
    anything else goes through the methods below."""

    # -- buffers ----------------------------------------------------------------------------
    def allocate(self, desc: Any) -> Any:
        """A new Memory of layout `desc` for a call's output or a temporary. Its bytes may be
        shared later with buffers whose lifetimes do not overlap (the plan lays buffers out
        by liveness when it is complete). Inside a sub-batch it is that sub-batch's part
        (plan/sub_batch_buffers.py): allocate the same buffers in the same order whatever the
        sub-batch."""

    def keep(self, memory: Any) -> Any:
        """Give `memory` bytes of its own, never shared with another buffer: for a buffer read
        outside the plan's calls (outputs a loss head hands the user) or through another
        Memory over its bytes (a `view` with other dims). Returns `memory`."""

    def transient(self, memory: Any) -> Any:
        """Declare that nothing reads `memory` after the consumer about to be planned (not
        backward, not a later op): in a sub-batch it then moves to one buffer shared by every
        sub-batch, so it is still in cache when that consumer reads it. Call it before
        planning the consumer (numba kernels capture arrays when they are planned). Returns
        `memory`; outside sub-batches nothing changes."""

    # -- primitives and calls ---------------------------------------------------------------
    def primitive(self, key: tuple, make_pd: Callable[[], Any]) -> Any:
        """A ready-to-run primitive from the process-wide cache; `make_pd()` builds its
        primitive descriptor on a miss. `key` must name everything the descriptor depends
        on (kind, prop kind, layouts, attributes): ops pass `*descriptor(...)`
        (binding/descriptor.py), which derives both from the same arguments."""

    def bind(self, primitive: Any, args: dict, label: str) -> Any:
        """A call of `primitive` on `args` ({dnnl.ARG_*: Memory}) with the plan's shared
        scratchpad attached, named `label` (profiles and tests read labels). It is not
        planned until passed to add_forward or add_backward."""

    def kernel(self, function: Callable, arguments: Iterable, label: str) -> Any:
        """A call of a compiled numba `function` on `arguments` (numpy arrays and scalars,
        captured now: a plan buffer viewed so keeps bytes of its own, see memory_kernel)."""

    def memory_kernel(self, function: Callable, arguments: Iterable, label: str) -> Any:
        """A kernel call whose Memory arguments are read as arrays at every run, so their
        buffers may still be laid out by liveness (prefer it to kernel for plan buffers)."""

    def add_forward(self, call: Any) -> None:
        """Append `call` (from bind, kernel or memory_kernel) to the forward list."""

    def add_backward(self, call: Any) -> None:
        """Append `call` to the backward list; a gradient it writes through param_grad in
        another layout than the stored one is reordered right after it."""

    def loss_term(self) -> Any:
        """A one-float array a forward kernel writes a penalty into at every step (an
        activity regularizer's); the plan adds every term to the loss it reports."""

    # -- layouts ----------------------------------------------------------------------------
    def reorder(self, source: Any, desc: Any, label: str, backward: bool = False) -> Any:
        """`source` (a Memory) in layout `desc`: `source` itself when it already is, else a
        new buffer filled by a reorder call appended to the forward list (the backward list
        when `backward`). Inference plans share one reorder among readers of one tensor."""

    def overwrite(self, memory: Any) -> Any:
        """Call before planning a call that writes over `memory` in place (a convolution
        adding into its residual input): reorders shared from or into it are stale after.
        Returns `memory`."""

    # -- parameters -------------------------------------------------------------------------
    def param(self, name: str, desc: Any) -> Any:
        """The value of parameter `name` in layout `desc`: the stored Memory, or a buffer a
        reorder fills at every step, one per layout shared by every reader. Weights are
        whole even when asked for inside a sub-batch."""

    def master_layout(self, name: str, desc: Any) -> None:
        """Keep the f32 master copy of `name` in layout `desc` if it is not laid out yet (a
        bf16 primitive's weight gradient layout, so no reorder is needed per step)."""

    def derived(self, key: Hashable, make: Callable[[], Any]) -> Any:
        """A value computed from parameters once per step (a convolution's weights times a
        following per-channel scale): `make()` plans it on the first request, outside any
        sub-batch (its buffers are whole, its calls join the forward list once); later
        requests with the same key get the same result, including the gradient totals
        derived_grad() keeps under its keys."""

    def wants_grad(self, name: str) -> bool:
        """Whether the step computes the gradient of parameter `name`: ask before planning a
        weight gradient (none when not training, or the weight is frozen)."""

    # -- gradients --------------------------------------------------------------------------
    def param_grad(self, name: str, desc: Any) -> Any:
        """The Memory a backward call writes the gradient of parameter `name` into, in
        layout `desc`: the stored gradient for its first writer; for sub-batches after the
        first, and a layer's later calls, a part that add_pending_sums() adds to it. When
        `desc` is not the stored layout the result is reordered after the call (pass the
        call to add_backward)."""

    def derived_grad(self, key: Hashable, desc: Any) -> Any:
        """The Memory a backward call writes the gradient of a derived() value into, in
        layout `desc`: the whole total (kept under `key`, see derived) for the first writer,
        a part summed into it later for the others, as param_grad."""

    def after_gradient_sums(self, key: Hashable, plan: Callable[[], None]) -> None:
        """Have `plan()` add its backward calls once the parts of gradients are summed: a
        derived value's gradient is complete only then. One per key (later calls with the
        same key are ignored)."""

    def writable(self, memory: Any) -> bool:
        """Whether the op may write its input gradient into the output gradient `memory` in
        place (not when the plan handed the same buffer to another consumer: a fan-out)."""

    def share(self, memory: Any) -> None:
        """Mark a gradient buffer handed to more than one consumer: writable() is then
        False for it."""

    def add_sum(self, target: Any, sources: list, label: str) -> None:
        """Append `target = sum(sources)` (all in target's layout; target may be sources[0])
        to the backward list."""

    def add_gradient_sum(self, target: Any, sources: list, label: str) -> None:
        """add_sum for the gradient of a tensor with several consumers; the op that reads
        the sum next may take it back with take_gradient_sum."""

    def take_gradient_sum(self, grad: Any) -> tuple | None:
        """The sources of `grad` if the last backward call is the add_gradient_sum that wrote
        it: that call is removed and the caller computes the sum in its own pass. None
        otherwise (`grad` is then complete)."""
