"""Weight and activity regularizers (`keras.regularizers`): Keras 3 names and formulas.

A regularizer is a penalty added to the loss: `l1 * sum(|x|) + l2 * sum(x ** 2)`. kiln does not
evaluate it as a Python function each step: the engine reads its two coefficients and adds the
penalty and its gradient in the step (plan/weight_penalties.py for weights,
ops/activity_regularization.py for layer outputs). Calling a regularizer on an array gives
its value, as in Keras. A user's Regularizer subclass whose `__call__(x)` uses keras.ops is
traced into the step instead (regularizer_tracing.py), like a loss written with keras.ops.

The gradient of `|x|` at exactly 0 is taken as 0 (sign(0)), as TensorFlow and PyTorch do; Keras
on JAX takes 1 there, so an l1-penalized weight that sits at exactly 0 (a zero-initialized bias)
moves by `learning_rate * l1` on its first step there and stays put in kiln.
"""

import numpy as np


class Regularizer:
    """Base class: a subclass defines `__call__(x)` with keras.ops (one value from the
    weight, traced into the step) and `get_config()`; kiln's own define `coefficients()`
    -> (l1, l2), which a kernel computes."""

    def __call__(self, x):
        return 0.0

    def _traced(self):
        return type(self).__call__ is not Regularizer.__call__ \
            and type(self).coefficients is Regularizer.coefficients

    def coefficients(self):
        """(l1, l2) of the kernel's penalty: (0, 0) for a traced regularizer."""
        if self._traced():
            return 0.0, 0.0
        raise NotImplementedError

    def penalty_trace(self, shape=None):
        """The trace of a user's `__call__` the plan runs (None for l1 / l2); traced once
        now on a weight of `shape`, when given, so that a mistake shows where the weight is
        made."""
        if not self._traced():
            return None
        from .regularizer_tracing import penalty_trace

        trace = penalty_trace(self)
        if shape is not None:
            trace(shape)
        return trace

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
    """Keras 3's config of a regularizer; a user's subclass as Keras writes it (its module, its
    registered name or class name)."""
    if type(regularizer) in ALL.values():
        return {"module": "keras.regularizers", "class_name": type(regularizer).__name__,
                "config": regularizer.get_config(), "registered_name": None}
    from .saving.serialization import serialize_keras_object

    config = serialize_keras_object(regularizer)
    config["registered_name"] = config["registered_name"] or type(regularizer).__name__
    return config


def deserialize(config, custom_objects=None):
    from .saving.serialization import _user_object

    objects = {**ALL, **(custom_objects or {})}
    name = config.get("class_name")
    user = _user_object(config, custom_objects)  # registered, or in a custom_object_scope
    if user is not None:
        return user.from_config(config.get("config", {}))
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
        if identifier._traced() and argument == "activity_regularizer":
            raise ValueError(f"{context}: argument activity_regularizer must be "
                             "keras.regularizers.L1, L2 or L1L2 (a Regularizer subclass "
                             f"works as a weight regularizer only so far), got {identifier!r}")
        try:
            identifier.coefficients()
        except NotImplementedError:
            pass
        else:
            return identifier
    raise ValueError(f"{context}: argument {argument} must be keras.regularizers.L1, L2 or "
                     f"L1L2 (or their names), or a keras.regularizers.Regularizer subclass "
                     f"that defines __call__(x) with keras.ops, got {identifier!r}")
