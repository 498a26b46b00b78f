"""The parameters as a step's calls read them: in the layouts their primitives want (one
reorder per layout per step when the stored one differs), and values computed from them once
per step (derived()). Weights are whole: none of this is ever planned per sub-batch.
"""

from ..binding.memory import layout_key


class ParameterViews:
    """Args:
        parameters: the model's ParameterStore.
        training: whether the plan trains (frozen or not, no gradient otherwise).
        reorders: the plan's primitives.Reorders.
        sub_batches: the plan's SubBatchBuffers (left while planning parameter views).
        forward_calls: the builder's forward list (derived() notes which calls it planned).
    """

    def __init__(self, parameters, training, reorders, sub_batches, forward_calls):
        self.parameters = parameters
        self._training = training
        self._reorders = reorders
        self._sub_batches = sub_batches
        self._forward_calls = forward_calls
        self._views = {}             # (name, layout) -> the value in that layout
        # key -> what derived() planned for it; gradient_sums.GradientSums.derived_grad
        # stores its totals here too, so derived(key) finds them (see Builder.derived_grad)
        self.derived_values = {}
        self.derived_calls = set()   # id() of the forward calls derived() planned

    def value(self, name, desc):
        """The value of parameter `name` in layout `desc` (shared by every reader of it)."""
        key = (name, layout_key(desc))
        if key not in self._views:
            value = self.parameters.value_memory(name, desc)
            with self._sub_batches.outside():  # weights are whole, never sliced
                self._views[key] = self._reorders.reorder(value, desc, f"{name} to layout")
        return self._views[key]

    def derived(self, key, make):
        """`make()`'s result, planned on the first request outside any sub-batch; the same
        result for later requests with `key`."""
        if key not in self.derived_values:
            first = len(self._forward_calls)
            with self._sub_batches.outside():
                self.derived_values[key] = make()
            self.derived_calls.update(id(call) for call in self._forward_calls[first:])
        return self.derived_values[key]

    def wants_grad(self, name):
        """Whether the step computes the gradient of parameter `name` (not when frozen)."""
        return self._training and self.parameters.trainable(name)

    def master_layout(self, name, desc):
        """Keep the f32 master copy of `name` in layout `desc` (if not laid out yet)."""
        self.parameters.value_memory(name, desc)
