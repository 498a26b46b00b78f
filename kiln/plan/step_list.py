"""The compiled step as one list of entries: what `StepPlan.train_step()` runs, what a timed
step times (timed_step.py) and what kiln.profiler describes, in one order written once here.

Each entry is a StepEntry: the call's label for a reader, its phase, who it belongs to (the
layer that planned it, the loss, the metric, or the part of the update) and the callable it
runs. The profiler reads those fields; it never takes them back out of the label.

Who planned a call is recorded while the plan is built (CallOwners): StepPlan claims the
calls that an op's forward or backward, a loss head, a metric or a gradient sum adds.
"""

from contextlib import contextmanager
from dataclasses import dataclass

from ..binding import constants as dnnl
from .gradients import GradientMap

# the order the step runs them in; "loss" and "metric" calls run after the forward and are
# planned into the forward list
PHASES = ("forward", "loss", "metric", "backward", "update")


@dataclass(frozen=True, slots=True)
class StepEntry:
    """One thing the step runs.

    label: what a reader sees ("conv2d_1 backward data", "optimizer update").
    phase: one of PHASES.
    owner: the layer (the model graph's op name) whose planning added a forward or backward
        call, the loss's name for a loss call, the metric's name for a metric call, the part
        of the update ("optimizer", "weight penalties", "gradient reduction", "constraints")
        for an update entry; None for a call no one claimed (an inference plan's output
        reorder).
    run: the callable (a bound method: calling it is the whole cost in the step).
    call: the planned BoundCall / KernelCall (its primitive and arguments: the profiler's
        FLOPs, bytes and kind), None for update entries.
    primitive: oneDNN's primitive name ("convolution backward data"), "numba kernel", or
        what runs an update entry ("collective", ...).
    implementation: the kernel oneDNN picked, the numba function's name, or the optimizer's.
    """

    label: str
    phase: str
    owner: object
    run: object
    call: object = None
    primitive: str = ""
    implementation: str = ""

    @property
    def layer(self):
        """The layer name of a forward or backward entry; None for the others."""
        return self.owner if self.phase in ("forward", "backward") else None


def primitive_names(call):
    """(primitive, implementation) of a planned call: oneDNN's kind and chosen kernel, or the
    numba kernel's function."""
    primitive = getattr(call, "primitive", None)
    if primitive is not None:
        return primitive.name, primitive.pd.implementation
    function = getattr(call, "function", None)
    return "numba kernel", getattr(function, "__name__", type(call).__name__)


class CallOwners:
    """Who planned each call of a builder's forward and backward lists.

    `claim(owner, phase)` gives the calls added to either list while its body runs to
    `owner`. Calls are only ever appended to or popped from the end of the lists (an op may
    take back the gradient sum just before it), so the calls of a claim are the unclaimed
    ones at the end when it exits; whatever was added outside a claim is marked at the next
    claim's start so a later claim does not take it.
    """

    def __init__(self, builder):
        self.builder = builder
        # id(call) -> (call, owner, phase); the call is kept so that its id is never reused
        # by a later call while the plan is built
        self._owners = {}

    def _lists(self):
        return self.builder.forward_calls, self.builder.backward_calls

    def _mark(self, owner, phase):
        for calls in self._lists():
            for call in reversed(calls):
                if id(call) in self._owners:
                    break
                self._owners[id(call)] = (call, owner, phase)

    @contextmanager
    def claim(self, owner, phase):
        self._mark(None, None)  # added outside any claim: not this one's
        try:
            yield
        finally:
            self._mark(owner, phase)

    def owner(self, call):
        """(owner, phase) of a claimed call, else (None, None)."""
        found = self._owners.get(id(call))
        return (found[1], found[2]) if found is not None and found[0] is call else (None, None)


def call_entries(owners, parameter_owners, parameters):
    """StepEntry of every planned call, forward list then backward list.

    A backward call no claim covered is the sum of a parameter's gradient parts (sub-batches,
    a layer called more than once) or what is planned after those sums: it belongs to the
    layer whose parameter gradient it writes (`parameter_owners`: parameter name -> layer).
    """
    builder = owners.builder
    gradient_owner = {}
    for name, owner in parameter_owners.items():
        parameter = parameters.parameters.get(name)
        if parameter is not None and parameter.grad is not None:
            gradient_owner[id(parameter.grad)] = owner
    entries = []
    for default_phase, calls in (("forward", builder.forward_calls),
                                 ("backward", builder.backward_calls)):
        for call in calls:
            owner, phase = owners.owner(call)
            if owner is None and default_phase == "backward":
                args = getattr(call, "args", None) or {}
                target = args.get(dnnl.ARG_DST, args.get(dnnl.ARG_TO))
                owner = gradient_owner.get(id(target))
            # the list says forward or backward (an op's backward may plan a weight reorder
            # into the forward list); the forward list's loss and metric calls say so
            if default_phase == "backward" or phase not in ("loss", "metric"):
                phase = default_phase
            entries.append(StepEntry(call.label, phase, owner, call.run, call,
                                     *primitive_names(call)))
    return entries


def update_entries(plan):
    """The entries a training plan runs after its calls, in this order: the data-parallel
    gradient reduction (when a reducer is set), the weight penalties' gradients, the
    optimizer, the constraints. An evaluation plan only adds its weight penalties to the
    loss; an inference plan has none."""
    if not (plan.training or plan.evaluating):
        return []
    entries = []
    reducer = plan.gradient_reducer
    if plan.training and reducer is not None:
        entries.append(StepEntry("gradient reduction", "update", "gradient reduction",
                                 reducer, None, "collective", "allreduce"))
    if plan._penalties:
        entries.append(StepEntry("weight penalties", "update" if plan.training else "loss",
                                 "weight penalties", _penalties_run(plan._penalties, plan._penalty),
                                 None,
                                 "numba kernel", "weight penalties"))
    if plan.training and plan.parameters.trainable_size:
        name = type(plan.optimizer).__name__.removesuffix("Updater") or "optimizer"
        entries.append(StepEntry("optimizer update", "update", "optimizer",
                                 _optimizer_run(plan.optimizer, plan.parameters), None,
                                 "numba kernel", name))
    if plan.training and plan._constraints:
        entries.append(StepEntry("constraints", "update", "constraints",
                                 plan._constraints.apply, None, "numba kernel", "constraints"))
    return entries


# The update entries run closures over what they use, not bound methods of the plan: a plan
# holding its own bound method is a reference cycle, and a plan dropped from a model's cache
# would keep its whole arena until the garbage collector ran.
def _penalties_run(penalties, box):
    """The weight penalties' entry: their sum (into `box`) joins the reported loss and, in
    training, their gradients the gradient arena."""
    def apply_penalties():
        box[0] = penalties.apply()
    return apply_penalties


def _optimizer_run(optimizer, store):
    """The optimizer over the trainable weights, given as segments of the arenas (frozen
    weights and state are packed after them; a repacking may change them between steps)."""
    def update():
        if store.trainable_size:
            optimizer.apply(store.values_arena, store.grads_arena, store.trainable_segments())
    return update


class OwnedGradients(GradientMap):
    """A GradientMap whose sums of a tensor's gradients (and the reorders before them) are
    owned by the layer that produced the tensor (the tensor's name)."""

    def __init__(self, builder, requires_grad, owners):
        super().__init__(builder, requires_grad)
        self._owners = owners

    def _sum(self, first, second, name):
        with self._owners.claim(name, "backward"):
            return super()._sum(first, second, name)
