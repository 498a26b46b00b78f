"""A loss head planned alone over a plain (N, K) input buffer, for the loss tests."""

import numpy as np

from kiln.binding.memory import Memory
from kiln.ops.tensor import Tensor
from kiln.plan.builder import PlanBuilder
from kiln.plan.parameters import ParameterStore
from kiln.plan.step_plan import plain_desc


class HeadHarness:
    """Args: head (a kiln.ops.losses head), n, k, label_shape (per sample), fused, scale;
    rows: plan the head's `plan_rows` (an image output's pixels) instead of `plan`."""

    def __init__(self, head, n, k, fused=False, scale=1.0, want_grad=True, rows=False):
        self.builder = PlanBuilder(ParameterStore(), training=want_grad)
        memory = Memory(plain_desc((n, k), "channels_last"))
        self.inputs = memory.as_array().reshape(n, k)
        self.labels = np.zeros((n, *head.label_shape((k,))), np.float32)
        self.weights = np.ones(n, np.float32)
        plan = head.plan_rows if rows else head.plan
        self.outputs, self.stats, grad = plan(self.builder, Tensor(memory), self.labels,
                                              self.weights, scale, want_grad, fused)
        self.grad = grad.as_array().reshape(n, k) if grad is not None else None
        self.builder.finish()

    def run(self, inputs, labels, weights=None):
        """The reduced loss of this batch (the kernel's stats[0])."""
        self.inputs[...] = inputs
        self.labels[...] = labels
        self.weights[...] = 1.0 if weights is None else weights
        for call in self.builder.forward_calls + self.builder.backward_calls:
            call.run()
        return float(self.stats[0])

    def numeric_gradient(self, inputs, labels, weights=None, eps=1e-3):
        grad = np.zeros(inputs.shape, np.float64)
        for index in np.ndindex(*inputs.shape):
            plus, minus = inputs.copy(), inputs.copy()
            plus[index] += eps
            minus[index] -= eps
            grad[index] = (self.run(plus, labels, weights)
                           - self.run(minus, labels, weights)) / (2 * eps)
        return grad
