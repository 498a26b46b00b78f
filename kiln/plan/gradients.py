"""Gradients flowing backward through a graph: one buffer per tensor, summed at a fan-out.

A tensor read by one consumer receives that consumer's input gradient as it is: no copy. A
tensor read by several (a residual block's input feeds the convolutions and the shortcut) gets
the gradients of all of them added with one oneDNN `sum` per extra arrival, in place into a
buffer the plan owns, or into a new one when both buffers are still read by someone else.

One buffer handed to several tensors (an add's backward passes its output gradient to every
input) is marked shared, so no op overwrites it in place while another still reads it.
"""

from collections import Counter


class GradientMap:
    """Args:
        builder: the PlanBuilder (backward calls are appended to it).
        requires_grad: id(tensor) -> whether anything upstream of it learns.
    """

    def __init__(self, builder, requires_grad):
        self.builder = builder
        self.requires_grad = requires_grad
        self._pending = {}

    def take(self, tensor):
        """The summed gradient of `tensor` (None when no gradient reaches it); all of its
        consumers have been planned by then, since backward walks the nodes in reverse."""
        return self._pending.pop(id(tensor), None)

    def deliver(self, inputs, grads):
        """Record `grads[i]` (a Memory or None) as a gradient of tensor `inputs[i]`."""
        handed = Counter(id(g) for g in grads if g is not None)
        for tensor, grad in zip(inputs, grads, strict=True):
            if grad is None or not self.requires_grad.get(id(tensor), False):
                continue
            if handed[id(grad)] > 1:
                self.builder.share(grad)
            existing = self._pending.get(id(tensor))
            self._pending[id(tensor)] = grad if existing is None else self._sum(
                existing, grad, tensor.name)

    def _sum(self, first, second, name):
        """first + second, written in place into whichever buffer no one else reads."""
        builder = self.builder
        if builder.writable(first):
            target, base, other = first, first, second
        elif builder.writable(second):
            target, base, other = second, second, first
        else:
            target, base, other = builder.allocate(first.desc), first, second
        other = builder.reorder(other, target.desc, f"{name} gradient to layout", backward=True)
        builder.add_gradient_sum(target, [base, other], f"{name} gradient sum")
        return target
