"""Weight and activity regularizers (`keras.regularizers`): Keras 3 names and formulas.

A regularizer is a penalty added to the loss: `l1 * sum(|x|) + l2 * sum(x ** 2)`. kiln does not
evaluate it as a Python function each step: the engine reads its two coefficients and adds the
penalty and its gradient in the step (plan/weight_penalties.py for weights,
ops/activity_regularization.py for layer outputs). Calling a regularizer on an array gives
its value, as in Keras.

The gradient of `|x|` at exactly 0 is taken as 0 (sign(0)), as TensorFlow and PyTorch do; Keras
on JAX takes 1 there, so an l1-penalized weight that sits at exactly 0 (a zero-initialized bias)
moves by `learning_rate * l1` on its first step there and stays put in kiln.
"""

import numpy as np


class Regularizer:
    """Base class. A subclass kiln can plan defines `coefficients()` -> (l1, l2)."""

    def __call__(self, x):
        return 0.0

    def coefficients(self):
        raise NotImplementedError

    def get_config(self):
        raise NotImplementedError(f"{type(self).__name__} does not define get_config()")

    @classmethod
    def from_config(cls, config):
        return cls(**config)


def _float(value, name, owner):
    try:
        value = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{owner}: argument {name} must be a float, got {value!r}") from None
    if not np.isfinite(value) or value < 0:
        raise ValueError(f"{owner}: argument {name} must be a finite float >= 0, got {value!r}")
    return value


class L1L2(Regularizer):
    """`l1 * sum(|x|) + l2 * sum(x ** 2)`. Args: l1 (0.0), l2 (0.0)."""

    def __init__(self, l1=0.0, l2=0.0):
        self.l1 = _float(l1, "l1", "L1L2")
        self.l2 = _float(l2, "l2", "L1L2")

    def __call__(self, x):
        x = np.asarray(x, dtype=np.float32)
        return np.float32(self.l1 * np.sum(np.abs(x)) + self.l2 * np.sum(np.square(x)))

    def coefficients(self):
        return self.l1, self.l2

    def get_config(self):
        return {"l1": self.l1, "l2": self.l2}


class L1(L1L2):
    """`l1 * sum(|x|)`. Args: l1 (0.01)."""

    def __init__(self, l1=0.01):
        super().__init__(l1=_float(l1, "l1", "L1"))

    def get_config(self):
        return {"l1": self.l1}


class L2(L1L2):
    """`l2 * sum(x ** 2)`. Args: l2 (0.01)."""

    def __init__(self, l2=0.01):
        super().__init__(l2=_float(l2, "l2", "L2"))

    def get_config(self):
        return {"l2": self.l2}


# Keras' lowercase spellings (`from keras.regularizers import l2`), as in Keras 3: aliases of
# the classes, so l1_l2() defaults to 0.0 / 0.0 (Keras 2's function defaulted to 0.01 each)
l1, l2, l1_l2 = L1, L2, L1L2

ALL = {"L1": L1, "L2": L2, "L1L2": L1L2, "l1": L1, "l2": L2, "l1_l2": L1L2}


def serialize(regularizer):
    return {"module": "keras.regularizers", "class_name": type(regularizer).__name__,
            "config": regularizer.get_config(), "registered_name": None}


def deserialize(config, custom_objects=None):
    objects = {**ALL, **(custom_objects or {})}
    name = config.get("class_name")
    if name not in objects:
        raise ValueError(f"regularizer: unknown class_name {name!r}; expected one of "
                         f"{sorted(objects)}")
    return objects[name].from_config(config.get("config", {}))


def get(identifier, context="layer", argument="regularizer"):
    """A Regularizer from None, a name, a config dict or an instance; the error names the
    layer and the argument. A plain function cannot be planned (it would run in Python on
    every step): kiln asks for an L1 / L2 / L1L2 instead."""
    if identifier is None:
        return None
    if isinstance(identifier, dict):
        return deserialize(identifier)
    if isinstance(identifier, str):
        if identifier not in ALL:
            raise ValueError(f"{context}: argument {argument} must be one of {sorted(ALL)}, "
                             f"got {identifier!r}")
        return ALL[identifier]()
    if isinstance(identifier, type) and issubclass(identifier, Regularizer):
        identifier = identifier()
    if isinstance(identifier, Regularizer):
        try:
            identifier.coefficients()
        except NotImplementedError:
            pass
        else:
            return identifier
    raise ValueError(f"{context}: argument {argument} must be keras.regularizers.L1, L2 or "
                     f"L1L2 (or their names); kiln plans their penalty into the step, other "
                     f"regularizers are not supported yet, got {identifier!r}")
