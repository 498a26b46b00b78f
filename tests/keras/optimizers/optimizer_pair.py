"""Helpers that run the same optimizer in kiln and in real Keras 3 (JAX) on the same weights
and the same sequence of gradients.

kiln's side is an arena laid out as the ParameterStore packs one: trainable weights back to
back, each followed by zeros (the padding of a blocked layout, inside its segment) and
aligned to 16 floats (gaps outside any segment), then a frozen weight that must not move.
Keras's side is one `keras.Variable` per weight and `apply_gradients`.

Arguments that are schedules are written as ("ExponentialDecay", {...}) and built in each
library from its own `optimizers.schedules`.
"""

import os

import numpy as np

os.environ.setdefault("KERAS_BACKEND", "jax")  # before anything imports Keras

from kiln import keras as kk  # noqa: E402

SHAPES = {"dense/kernel": (7, 5), "dense/bias": (5,), "conv/kernel": (3, 2, 2, 4)}
PADDING = {"dense/kernel": 0, "dense/bias": 11, "conv/kernel": 3}  # zeros inside a segment
FROZEN = 20


def real_keras():
    import keras
    return keras


def build(module, class_name, arguments):
    """`module.optimizers.<class_name>(**arguments)`, schedules built from `module`."""
    built = {}
    for key, value in arguments.items():
        if isinstance(value, tuple):
            schedule, config = value
            value = getattr(module.optimizers.schedules, schedule)(**config)
        built[key] = value
    return getattr(module.optimizers, class_name)(**built)


def starting_point(seed=0, steps=5, scale=1.0):
    """Weights and a sequence of gradients per weight (mixed magnitudes, so that clipping
    by norm cuts some weights and not others)."""
    rng = np.random.default_rng(seed)
    weights = {name: rng.normal(size=shape).astype(np.float32)
               for name, shape in SHAPES.items()}
    magnitude = {"dense/kernel": 2.0, "dense/bias": 0.05, "conv/kernel": 0.5}
    grads = [{name: (rng.normal(size=shape) * magnitude[name] * scale).astype(np.float32)
              for name, shape in SHAPES.items()} for _ in range(steps)]
    return weights, grads


class Arena:
    """Values and gradients of SHAPES packed as kiln packs them, and their segments."""

    def __init__(self, weights):
        segments, offset = [], 0
        for name, value in weights.items():
            stop = offset + value.size + PADDING[name]
            segments.append((name, offset, stop))
            offset = -(-stop // 16) * 16
        self.segments = tuple(segments)
        self.values = np.zeros(offset + FROZEN, np.float32)
        self.grads = np.zeros_like(self.values)
        self.values[offset:] = np.arange(1, FROZEN + 1)  # a frozen weight after them
        self.frozen = self.values[offset:].copy()
        for (_, start, _), value in zip(self.segments, weights.values(), strict=True):
            self.values[start:start + value.size] = value.reshape(-1)

    def set_grads(self, grads):
        for name, start, _ in self.segments:
            self.grads[start:start + grads[name].size] = grads[name].reshape(-1)

    def weight(self, name):
        start = dict((n, s) for n, s, _ in self.segments)[name]
        return self.values[start:start + int(np.prod(SHAPES[name]))].reshape(SHAPES[name])

    def outside_weights(self):
        """Every value that is not a weight: padding, gaps (all zero) and the frozen tail."""
        mask = np.ones(self.values.size, bool)
        for name, start, _ in self.segments:
            mask[start:start + int(np.prod(SHAPES[name]))] = False
        return self.values[mask]


class _Named:
    def __init__(self, path):
        self.path = path


def run_kiln(class_name, arguments, weights, grads, exclude=None):
    """Weights after each step, the arena, and the optimizer. `exclude`: {"var_names": [...],
    "var_list": [weight names]} for exclude_from_weight_decay."""
    optimizer = build(kk, class_name, arguments)
    if exclude:
        optimizer.exclude_from_weight_decay(
            var_list=[_Named(name) for name in exclude.get("var_list", ())],
            var_names=exclude.get("var_names"))
    updater = optimizer.make_updater()
    arena = Arena(weights)
    history = []
    for step_grads in grads:
        arena.set_grads(step_grads)
        updater.apply(arena.values, arena.grads, arena.segments)
        history.append({name: arena.weight(name).copy() for name in SHAPES})
    return history, arena, optimizer


def run_keras(class_name, arguments, weights, grads, exclude=None):
    """Weights after each step and the Keras optimizer."""
    keras = real_keras()
    variables = [keras.Variable(value, name=name.replace("/", "_"))
                 for name, value in weights.items()]
    optimizer = build(keras, class_name, arguments)
    if exclude:
        by_name = dict(zip(SHAPES, variables, strict=True))
        optimizer.exclude_from_weight_decay(
            var_list=[by_name[name] for name in exclude.get("var_list", ())],
            var_names=exclude.get("var_names"))
    history = []
    for step_grads in grads:
        optimizer.apply_gradients(zip([step_grads[name] for name in SHAPES], variables,
                                      strict=True))
        history.append({name: np.asarray(variable.numpy())
                        for name, variable in zip(SHAPES, variables, strict=True)})
    return history, optimizer
