"""Weight penalties (l1 / l2) and weight constraints, as kernels over the parameter arena.

Part of the plan: the step runs them around the optimizer update (see StepPlan.train_step).

Keras adds `l1 * sum|w| + l2 * sum w^2` of every regularized weight to the loss; its gradient
`l1 * sign(w) + 2 * l2 * w` joins the weight's gradient. Here one parallel pass per regularized
weight does both, in the arena's layout: padding inside blocked layouts is zero in values and
gradients, so it adds nothing to the penalty and gets no gradient.

Constraints run after the optimizer update, as Keras applies them. The norm constraints
(max_norm, unit_norm, min_max_norm) scale each group of weights (the weights that share the
indices of the axes *not* reduced) by a factor of the group's norm. The group of every element
is computed once, in the Keras layout, and reordered into the weight's stored layout with the
same oneDNN reorder as the weight itself, so each step runs in the stored layout with no reorder.
A user's constraint (("function", f)) is called on the whole weight in its Keras shape, read
out of and written back into the stored layout with one reorder each way.
"""

import numpy as np

from ..binding.memory import Memory
from ..binding.reorder import reorder_now
from ..ops.numba_config import PARALLEL, njit, prange


@njit(**PARALLEL)
def penalty_kernel(w, g, l1, l2):
    """g += l1 * sign(w) + 2 * l2 * w; returns l1 * sum|w| + l2 * sum w^2."""
    total = 0.0
    two_l2 = 2.0 * l2
    for i in prange(w.size):
        value = w[i]
        total += l1 * abs(value) + l2 * value * value
        g[i] += l1 * np.sign(value) + two_l2 * value
    return total


@njit(**PARALLEL)
def penalty_value_kernel(w, l1, l2):
    """l1 * sum|w| + l2 * sum w^2 (evaluation: no gradient)."""
    total = 0.0
    for i in prange(w.size):
        total += l1 * abs(w[i]) + l2 * w[i] * w[i]
    return total


@njit(**PARALLEL)
def non_negative_kernel(w):
    for i in prange(w.size):
        if w[i] < 0.0:
            w[i] = 0.0


@njit(**PARALLEL)
def norm_constraint_kernel(w, groups, norms, min_value, max_value, rate, epsilon):
    """w *= desired(norm) / (epsilon + norm) per group, desired = rate * clip(norm, min, max)
    + (1 - rate) * norm: MinMaxNorm; MaxNorm is (0, max, 1), UnitNorm (1, 1, 1)."""
    norms[:] = 0.0
    for i in range(w.size):  # few thousand weights: a serial sum keeps it deterministic
        norms[groups[i]] += w[i] * w[i]
    for j in range(norms.size):
        norm = np.sqrt(norms[j])
        desired = rate * min(max(norm, min_value), max_value) + (1.0 - rate) * norm
        norms[j] = desired / (epsilon + norm)
    for i in prange(w.size):
        w[i] *= norms[groups[i]]


def group_indices(parameter, axes):
    """For each element of `parameter`'s stored value, the index of its group: the flat index
    over the Keras axes that are not in `axes`."""
    shape = parameter.keras_shape
    axes = {axis % len(shape) for axis in axes}
    kept = [axis for axis in range(len(shape)) if axis not in axes]
    index = np.zeros(shape, dtype=np.int64)
    stride = 1
    for axis in reversed(kept):
        view = np.arange(shape[axis]).reshape([-1 if a == axis else 1 for a in range(len(shape))])
        index = index + view * stride
        stride *= shape[axis]
    # the same reorder as the value's: float32 holds group indices exactly up to 2 ** 24
    source = Memory(parameter.user_desc)
    source.as_array()[:] = index.reshape(-1).astype(np.float32)
    target = Memory(parameter.value.desc)
    reorder_now(source, target)
    return target.as_array().astype(np.int64), stride


class ArenaSegments:
    """Views of named parameters' values and gradients in the store's current arenas (remade
    when the store packs new arenas)."""

    def __init__(self, store, names):
        self.store, self.names = store, list(names)
        self._arena, self._views = None, []

    def views(self):
        if self._arena is not self.store.values_arena:
            self._arena = self.store.values_arena
            self._views = []
            for name in self.names:
                parameter = self.store.parameters[name]
                size = parameter.value.desc.size // 4
                self._views.append((parameter.value.storage[:size * 4].view(np.float32),
                                    parameter.grad.storage[:size * 4].view(np.float32)))
        return self._views


class WeightPenalties:
    """The l1 / l2 penalties of a store's trainable parameters that have one; with
    `gradients`, apply() also adds their gradients (training plans)."""

    def __init__(self, store, gradients=True):
        self.gradients = gradients
        names = [name for name, p in store.parameters.items()
                 if p.trainable and (p.l1 or p.l2) and p.value is not None]
        self.coefficients = [(np.float32(store.parameters[n].l1),
                              np.float32(store.parameters[n].l2)) for n in names]
        self.segments = ArenaSegments(store, names)

    def __bool__(self):
        return bool(self.coefficients)

    def apply(self):
        """Add the penalties' gradients; returns the penalty (a float)."""
        total = 0.0
        for (values, grads), (l1, l2) in zip(self.segments.views(), self.coefficients,
                                             strict=True):
            total += (penalty_kernel(values, grads, l1, l2) if self.gradients
                      else penalty_value_kernel(values, l1, l2))
        return total


class WeightConstraints:
    """The constraints of a store's trainable parameters, applied after each update."""

    def __init__(self, store, epsilon):
        self.steps = []
        names = []
        for name, parameter in store.parameters.items():
            constraint = parameter.constraint
            if constraint is None or not parameter.trainable or parameter.value is None:
                continue
            names.append(name)
            if constraint[0] == "non_neg":
                self.steps.append(None)
                continue
            if constraint[0] == "function":
                self.steps.append(UserConstraint(store, name, constraint[1]))
                continue
            _, min_value, max_value, rate, axes = constraint
            groups, count = group_indices(parameter, axes)
            self.steps.append((groups, np.zeros(count, np.float32), np.float32(min_value),
                               np.float32(max_value), np.float32(rate), np.float32(epsilon)))
        self.segments = ArenaSegments(store, names)

    def __bool__(self):
        return bool(self.steps)

    def apply(self):
        for (values, _), step in zip(self.segments.views(), self.steps, strict=True):
            if step is None:
                non_negative_kernel(values)
            elif isinstance(step, UserConstraint):
                step.apply()
            else:
                norm_constraint_kernel(values, *step)


class UserConstraint:
    """A user's constraint `f(w) -> w` on one weight: the weight in its Keras shape (one
    reorder out of the stored layout into a buffer kept for it), `f` once, the result
    reordered back."""

    def __init__(self, store, name, function):
        self.store, self.name, self.function = store, name, function
        parameter = store.parameters[name]
        self.shape = parameter.keras_shape
        self.keras_value = Memory(parameter.user_desc)

    def apply(self):
        parameter = self.store.parameters[self.name]
        reorder_now(parameter.value, self.keras_value)
        array = self.keras_value.as_array()
        result = self.function(array[:int(np.prod(self.shape))].reshape(self.shape))
        result = np.asarray(result.numpy() if hasattr(result, "numpy") else result,
                            dtype=np.float32)
        if result.shape != self.shape:
            raise ValueError(f"constraint {type(self.function).__name__} of weight "
                             f"'{self.name}': returned shape {result.shape}, expected the "
                             f"weight's shape {self.shape}")
        array[:result.size] = result.reshape(-1)
        reorder_now(self.keras_value, parameter.value)
