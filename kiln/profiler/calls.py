"""What each entry of a training step is, in a reader's terms: the Keras layer(s) it belongs
to, its phase (forward, backward, update), the oneDNN primitive and the implementation oneDNN
picked (or the numba kernel), its kind (kinds.py), the multiply-add FLOPs it does and the
bytes it touches.

All of it comes from the plan's entries (kiln.plan.step_list.StepEntry), never from their
labels: an entry names the layer that planned it (a fused op is named after the layer it
kept, a Conv2DOp that absorbed its ActivationOp, or after both, "max_pooling2d+dropout"), and the
model's unfused graph says which layers each fused op absorbed. The loss's and the metrics'
calls run in the forward part of the step and are shown there.

FLOPs are 2 x multiply-adds, read from the shapes the primitive runs on: forward, backward
data and backward weights of a convolution or an inner product each do the same count.
Bytes are the sizes of the call's arguments (each read or written once; the scratchpad left
out): a lower bound on the traffic, good for telling memory-bound calls apart.
"""

from dataclasses import dataclass
from math import prod

from ..binding import constants as dnnl
from ..binding.memory import Memory
from ..plan.liveness import kernel_arrays
from .kinds import call_kind

PHASES = ("forward", "backward", "update")
# the step's phases as the report shows them: the loss and metric kernels run between the
# forward and the backward and are timed with the forward, as they always were
SHOWN_PHASE = {"forward": "forward", "loss": "forward", "metric": "forward",
               "backward": "backward", "update": "update"}


@dataclass(frozen=True)
class CallInfo:
    """One entry of the step. `name` is what a trace slice shows: the entry's owner (the
    layer's name, a fused op's, the loss's, the metric's, the update part's), or its label
    when no one owns it."""

    phase: str
    label: str
    name: str
    layers: tuple
    primitive: str
    implementation: str
    kind: str
    flops: float
    bytes: int


def fused_members(model_graph, plan_graph):
    """{fused op name: (Keras layer names it runs, in order)} for every op of the plan's
    graph (an op that absorbed nothing maps to its own name), and the same for every layer
    an op absorbed."""
    kept = {id(node.output): node.op.name for node in plan_graph.nodes}
    readers = {}
    for node in model_graph.nodes:
        for tensor in node.inputs:
            readers.setdefault(id(tensor), []).append(node)
    members = {}
    for node in model_graph.nodes:
        tensor = node.output
        # an absorbed producer's output has one reader: follow it to the op that kept it
        while id(tensor) not in kept and len(readers.get(id(tensor), ())) == 1:
            tensor = readers[id(tensor)][0].output
        owner = kept.get(id(tensor), node.op.name)
        members.setdefault(owner, []).append(node.op.name)
    for node in plan_graph.nodes:
        members.setdefault(node.op.name, [node.op.name])
    groups = {name: tuple(names) for name, names in members.items()}
    # a call may be labelled after an absorbed layer too (the gradient sum of a relu the
    # batch norm before it absorbed): it belongs to the same group
    for group in list(groups.values()):
        for name in group:
            groups.setdefault(name, group)
    return groups


def multiply_add_flops(call):
    """2 x multiply-adds of a convolution, deconvolution or inner-product call (any of its
    three passes), from the shapes bound to it; 0 for every other call."""
    kind = getattr(getattr(call, "primitive", None), "name", "")
    args = getattr(call, "args", {})
    weights = _first(args, dnnl.ARG_WEIGHTS, dnnl.ARG_DIFF_WEIGHTS)
    if weights is None or not kind.startswith(("convolution", "deconvolution", "inner product")):
        return 0.0
    w = weights.desc.dims
    if kind.startswith("deconvolution"):
        # each input pixel scatters into a kernel's worth of outputs: weights (G,) O, I, k...
        source = _first(args, dnnl.ARG_SRC, dnnl.ARG_DIFF_SRC)
        grouped = len(w) == len(source.desc.dims) + 1
        per_input = (w[1] * prod(w[3:])) if grouped else (w[0] * prod(w[2:]))
        return 2.0 * prod(source.desc.dims) * per_input
    # each output value sums a kernel's worth of products: weights (G,) O, I, k...
    output = _first(args, dnnl.ARG_DST, dnnl.ARG_DIFF_DST)
    # an inner product's weights have the rank of its source (O, I, spatial...), never groups
    grouped = kind.startswith("convolution") and len(w) == len(output.desc.dims) + 1
    return 2.0 * prod(output.desc.dims) * prod(w[2:] if grouped else w[1:])


def _first(args, *indices):
    return next((args[index] for index in indices if index in args), None)


def moved_bytes(call):
    """Bytes of the buffers a call reads or writes (scratchpad excluded)."""
    args = getattr(call, "args", None)
    total = 0
    if args:
        total += sum(memory.desc.size for index, memory in args.items()
                     if index != dnnl.ARG_SCRATCHPAD and isinstance(memory, Memory))
    arguments = getattr(call, "arguments", ())
    total += sum(array.nbytes for array in kernel_arrays(arguments))
    return int(total)


def describe(plan, model_graph=None):
    """CallInfo for every entry of a plan (kiln.plan.step_list), in the order the step runs
    them. Without the model's graph, entries are named after the plan's (fused) ops only."""
    members = fused_members(model_graph or plan.graph, plan.graph)
    infos = []
    trainable_bytes = 4 * plan.parameters.trainable_size
    for entry in plan.entries:
        layer = entry.layer
        layers = members.get(layer, ()) if layer is not None else ()
        name = entry.owner if entry.owner is not None else entry.label
        if entry.call is not None:
            kind, flops, moved = call_kind(entry.call), multiply_add_flops(entry.call), \
                moved_bytes(entry.call)
        else:  # an update entry: its kind is its part
            kind, flops, moved = entry.owner, 0.0, 0
            if entry.owner == "gradient reduction":
                moved = trainable_bytes
            elif entry.owner == "optimizer":
                # read weights and gradients, write weights, read and write every slot
                moved = trainable_bytes * (3 + 2 * len(getattr(plan.optimizer, "slots", {})))
        infos.append(CallInfo(SHOWN_PHASE[entry.phase], entry.label, name, layers,
                              entry.primitive, entry.implementation, kind, flops, moved))
    return infos
