"""Where backward calls write gradients, and the sums of gradients written in parts.

A parameter's gradient is written whole by its first writer; sub-batches after the first, and
later calls of a layer used more than once, write parts of their own that one sum per
parameter adds up at the end (add_pending_sums). Values derived from parameters
(PlanBuilder.derived) get their gradients the same way, and whatever turns those into the
parameters' gradients is planned after their sums (after_gradient_sums). A gradient a
primitive writes in another layout than the stored one is reordered right after it
(DeferredReorder).
"""

from ..binding import constants as dnnl
from ..binding.memory import Memory, layout_key
from ..binding.primitive import reorder_pd, sum_pd


class GradientSums:
    """PlanBuilder's gradient targets (a mixin: it uses the builder's buffers and lists)."""

    # -- gradients written in parts, and their sums --------------------------------------
    def derived_grad(self, key, desc):
        """Where a backward primitive writes the gradient of a derived() value, in layout
        `desc`: for the first writer a whole buffer of its own; sub-batches after the first,
        and later calls of a layer used more than once, get a part that add_pending_sums()
        adds to it (as param_grad's parts)."""
        later_part = (self._slice is not None and self._slice[1] > 0) or key in self._written
        if key not in self._derived:
            current, self._slice = self._slice, None
            try:
                self._derived[key] = self.allocate(desc)
            finally:
                self._slice = current
        total = self._derived[key]
        self._written.add(key)
        if not later_part:
            return total
        part = Memory(total.desc)
        self._pending_sums.setdefault(key, (total, []))[1].append(part)
        return part

    def after_gradient_sums(self, key, plan):
        """Have `plan()` add its backward calls once the gradient parts are summed (the next
        add_pending_sums()): a derived value's gradient is complete only then. One per key."""
        self._after_sums.setdefault(key, plan)

    def param_grad(self, name, desc):
        """Where a backward primitive should write the gradient of `name` in layout `desc`."""
        grad = self.parameters.grad_memory(name)
        later_part = (self._slice is not None and self._slice[1] > 0) or name in self._written
        if not later_part:
            self._written.add(name)
        if later_part:
            # later sub-batches, and a layer's later calls, write their part aside;
            # add_pending_sums() adds them all
            part = Memory(grad.desc)
            self._pending_sums.setdefault(name, (grad, []))[1].append(part)
            if desc == grad.desc:
                return part
            return DeferredReorder(self, desc, part, f"{name} gradient to layout")
        if grad.desc == desc:
            return grad
        return DeferredReorder(self, desc, grad, f"{name} gradient to layout")

    def add_sum(self, target, sources, label):
        """Add `target = sum(sources)` (all in target's layout; target may be sources[0]) to
        the backward list."""
        descs = [target.desc] + [source.desc for source in sources]
        primitive = self.primitive(("sum", *(layout_key(d) for d in descs)),
                                   lambda: sum_pd(descs[0], descs[1:]))
        args = {dnnl.ARG_MULTIPLE_SRC + i: memory for i, memory in enumerate(sources)}
        args[dnnl.ARG_DST] = target
        self.backward_calls.append(self.bind(primitive, args, label))

    def add_gradient_sum(self, target, sources, label):
        """add_sum for the gradient of a tensor with several consumers. The op that reads the
        sum next may take it back (take_gradient_sum) and fold it into its own pass."""
        self.add_sum(target, sources, label)
        self._last_gradient_sum = (self.backward_calls[-1], target, tuple(sources))

    def take_gradient_sum(self, grad):
        """The sources of `grad` if the last backward call is the gradient sum that wrote it;
        that call is then removed (the caller computes the sum itself). None otherwise."""
        last = getattr(self, "_last_gradient_sum", None)
        if last is None or last[1] is not grad or not self.backward_calls \
                or self.backward_calls[-1] is not last[0]:
            return None
        self.backward_calls.pop()
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

    add_sub_batch_sums = add_pending_sums


class DeferredReorder(Memory):
    """A temporary gradient buffer in a primitive's layout, reordered into the stored gradient
    right after the primitive that writes it (`add_backward` does this)."""

    def __init__(self, builder, desc, grad, label):
        super().__init__(desc)
        self._builder, self._grad, self._label = builder, grad, label

    def flush(self):
        key = ("reorder", layout_key(self.desc), layout_key(self._grad.desc))
        builder = self._builder
        primitive = builder.primitive(key, lambda: reorder_pd(self.desc, self._grad.desc))
        # Appended directly: add_backward would see `self` among the args and flush again.
        builder.backward_calls.append(builder.bind(primitive, {dnnl.ARG_FROM: self,
                                                               dnnl.ARG_TO: self._grad},
                                                   self._label))
        builder.reorder_labels.append(self._label)
