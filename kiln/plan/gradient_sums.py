"""Where backward calls write gradients, and the sums of gradients written in parts.

A parameter's gradient is written whole by its first writer; sub-batches after the first, and
later calls of a layer used more than once, write parts of their own that one sum per
parameter adds up at the end (add_pending_sums). Values derived from parameters
(PlanBuilder.derived) get their gradients the same way, and whatever turns those into the
parameters' gradients is planned after their sums (after_gradient_sums). A gradient a
primitive writes in another layout than the stored one is reordered right after it
(DeferredReorder). A tensor's gradient handed to several consumers (a fan-out) is marked
shared so that none of them overwrites it in place.
"""

from ..binding import constants as dnnl
from ..binding.descriptor import sum_descriptor
from ..binding.memory import Memory


class GradientSums:
    """The plan's gradient targets and sums (PlanBuilder composes one; ops reach it through
    the builder's methods of the same names).

    Args:
        parameters: the model's ParameterStore (where the gradients are kept).
        derived: the dict of values derived from parameters (ParameterViews.derived_values):
            a derived value's gradient total is kept there under its own key, where
            PlanBuilder.derived finds it once the parts are summed.
        new_buffer: allocates a whole-batch buffer (buffers.Buffers.new).
        sub_batches: the plan's SubBatchBuffers (which sub-batch is planned).
        primitives: the plan's primitives.Primitives.
        calls: the builder's backward list (the sums and gradient reorders join it).
        labels: the builder's reorder labels.
    """

    def __init__(self, parameters, derived, new_buffer, sub_batches, primitives, calls,
                 labels):
        self._parameters = parameters
        self._derived = derived
        self._new_buffer = new_buffer
        self._sub_batches = sub_batches
        self._primitives = primitives
        self._calls = calls
        self._labels = labels
        self._after_sums = {}        # key -> a function planning calls after the sums
        self._pending_sums = {}      # name or key -> (gradient, later parts)
        self._shared_grads = set()   # id(Memory) of gradient buffers with several readers
        self._written = set()        # names and keys whose gradient a call already writes
        self._last_gradient_sum = None  # (call, target, sources) of add_gradient_sum

    def _later_part(self, key):
        """Whether the gradient of `key` was written already: this writer writes a part."""
        return (self._sub_batches.active and self._sub_batches.index > 0) \
            or key in self._written

    # -- gradients written in parts ---------------------------------------------------------
    def derived_grad(self, key, desc):
        """Where a backward primitive writes the gradient of a derived value (Builder)."""
        later_part = self._later_part(key)
        if key not in self._derived:
            self._derived[key] = self._new_buffer(desc)  # whole, even inside a sub-batch
        total = self._derived[key]
        self._written.add(key)
        if not later_part:
            return total
        part = Memory(total.desc)
        self._pending_sums.setdefault(key, (total, []))[1].append(part)
        return part

    def after_gradient_sums(self, key, plan):
        """Have `plan()` run at the next add_pending_sums() (Builder); one per key."""
        self._after_sums.setdefault(key, plan)

    def param_grad(self, name, desc):
        """Where a backward primitive should write the gradient of `name` in layout `desc`."""
        grad = self._parameters.grad_memory(name)
        later_part = self._later_part(name)
        if not later_part:
            self._written.add(name)
        if later_part:
            # later sub-batches, and a layer's later calls, write their part aside;
            # add_pending_sums() adds them all
            part = Memory(grad.desc)
            self._pending_sums.setdefault(name, (grad, []))[1].append(part)
            if desc == grad.desc:
                return part
            return DeferredReorder(self._primitives, self._calls, self._labels, desc, part,
                                   f"{name} gradient to layout")
        if grad.desc == desc:
            return grad
        return DeferredReorder(self._primitives, self._calls, self._labels, desc, grad,
                               f"{name} gradient to layout")

    # -- fan-outs ---------------------------------------------------------------------------
    def writable(self, memory):
        """Whether an op may overwrite the gradient buffer `memory` in place."""
        return id(memory) not in self._shared_grads

    def share(self, memory):
        """Mark a gradient buffer handed to more than one consumer."""
        self._shared_grads.add(id(memory))

    # -- sums -------------------------------------------------------------------------------
    def add_sum(self, target, sources, label):
        """Add `target = sum(sources)` (all in target's layout; target may be sources[0]) to
        the backward list."""
        primitive = self._primitives.get(*sum_descriptor(target.desc,
                                                         [source.desc for source in sources]))
        args = {dnnl.ARG_MULTIPLE_SRC + i: memory for i, memory in enumerate(sources)}
        args[dnnl.ARG_DST] = target
        self._calls.append(self._primitives.bind(primitive, args, label))

    def add_gradient_sum(self, target, sources, label):
        """add_sum for the gradient of a tensor with several consumers; the op that reads the
        sum next may take it back (take_gradient_sum)."""
        self.add_sum(target, sources, label)
        self._last_gradient_sum = (self._calls[-1], target, tuple(sources))

    def take_gradient_sum(self, grad):
        """The sources of `grad` if the last backward call is the gradient sum that wrote it;
        that call is then removed (the caller computes the sum itself). None otherwise."""
        last = self._last_gradient_sum
        if last is None or last[1] is not grad or not self._calls \
                or self._calls[-1] is not last[0]:
            return None
        self._calls.pop()
        self._last_gradient_sum = None
        return last[2]

    def add_pending_sums(self):
        """Add one sum per parameter: its gradient += every later part (sub-batches after the
        first, and later calls of a layer used more than once); then what after_gradient_sums()
        deferred, and the sums of any parts that adds."""
        while True:
            for name, (grad, parts) in self._pending_sums.items():
                self.add_sum(grad, [grad, *parts], f"{name} gradient, sum of parts")
            self._pending_sums = {}
            deferred, self._after_sums = self._after_sums, {}
            if not deferred:
                return
            for plan in deferred.values():
                plan()


class DeferredReorder(Memory):
    """A temporary gradient buffer in a primitive's layout, reordered into the stored gradient
    right after the primitive that writes it (PlanBuilder.add_backward calls flush())."""

    def __init__(self, primitives, calls, labels, desc, grad, label):
        super().__init__(desc)
        self._primitives, self._calls, self._labels = primitives, calls, labels
        self._grad, self._label = grad, label

    def flush(self):
        # Appended to the list directly: add_backward would see `self` among the args and
        # flush again.
        self._calls.append(self._primitives.reorder_call(self, self._grad, self._label))
        self._labels.append(self._label)
