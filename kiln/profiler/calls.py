"""What each call of a training step is, in a reader's terms: the Keras layer(s) it belongs
to, its phase (forward, backward, update), the oneDNN primitive and the implementation oneDNN
picked (or the numba kernel), its kind (kinds.py), the multiply-add FLOPs it does and the
bytes it touches.

Call labels start with the op's name, which is the Keras layer's name ("conv2d_1 backward
data", "conv2d_1/kernel to layout"); a fused op is named after the layer it kept (a Conv2D
that absorbed its Activation) or after both ("max_pooling2d+dropout"). The model's unfused
graph says which layers each fused op absorbed.

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
from ..plan.timed_step import update_phase
from .kinds import call_kind, update_kind

PHASES = ("forward", "backward", "update")


@dataclass(frozen=True)
class CallInfo:
    """One call of the step. `name` is what a trace slice shows: the layer's name, the fused
    layers joined by '+', or the label's first word for a call of no layer (the loss)."""

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


def layers_of(label, members):
    """(slice name, Keras layer names) of a call label."""
    head = label.split(" ", 1)[0].split("/", 1)[0]
    if head in members:
        return head, members[head]
    parts = head.split("+")
    if all(part in members for part in parts):
        return head, tuple(name for part in parts for name in members[part])
    return head, ()


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


def primitive_names(call):
    """(primitive, implementation): oneDNN's kind and chosen kernel, or the numba kernel."""
    primitive = getattr(call, "primitive", None)
    if primitive is not None:
        return primitive.name, primitive.pd.implementation
    function = getattr(call, "function", None)
    name = getattr(function, "__name__", type(call).__name__)
    return "numba kernel", name


def describe(plan, model_graph=None):
    """CallInfo for every call of a plan, in the order the step runs them, then a training
    plan's update phase entries (update_infos). Without the model's graph, calls are named
    after the plan's (fused) ops only."""
    members = fused_members(model_graph or plan.graph, plan.graph)
    forward = {id(call) for call in plan.builder.forward_calls}
    infos = []
    for call in plan.calls:
        name, layers = layers_of(call.label, members)
        primitive, implementation = primitive_names(call)
        infos.append(CallInfo("forward" if id(call) in forward else "backward", call.label,
                              name, layers, primitive, implementation, call_kind(call),
                              multiply_add_flops(call), moved_bytes(call)))
    infos.extend(update_infos(plan))
    return infos


def update_infos(plan):
    """The update phase's entries, in the order the step runs them (timed_step.update_phase):
    the data-parallel gradient reduction, weight penalties, the optimizer, constraints."""
    infos = []
    trainable_bytes = 4 * plan.parameters.trainable_size
    for label, _ in update_phase(plan):
        primitive, implementation, moved = "numba kernel", label, 0
        if label == "gradient reduction":
            primitive, implementation, moved = "collective", "allreduce", trainable_bytes
        elif label == "optimizer update":
            updater = plan.optimizer
            implementation = type(updater).__name__.removesuffix("Updater") or "optimizer"
            # read weights and gradients, write weights, read and write every slot
            moved = trainable_bytes * (3 + 2 * len(getattr(updater, "slots", {})))
        infos.append(CallInfo("update", label, label.removesuffix(" update"), (), primitive,
                              implementation, update_kind(label), 0.0, moved))
    return infos
