"""Weight constraints (`keras.constraints`): Keras 3 names, defaults and formulas.

A constraint projects a weight after every optimizer update. kiln applies it in the step, in
the weight's stored layout (plan/weight_penalties.py), from the description `spec()` gives;
calling a constraint on an array projects it with numpy, as Keras does with its ops.

A user's Constraint subclass (its `__call__(w)` written with keras.ops) runs after every
optimizer update too, on the whole weight in its Keras shape: keras.ops are numpy there, one
vectorised call per weight and step (its `spec()` hands the engine the object itself).
"""

import numpy as np

from . import backend


class Constraint:
    """Base class: a subclass defines `__call__(w)` (keras.ops on the weight, returning the
    projected weight of the same shape) and `get_config()`; kiln's own define `spec()`."""

    def __call__(self, w):
        return w

    def spec(self):
        """How the step applies this constraint: a user's subclass is called on the weight
        (("function", self)); kiln's built-in ones run a kernel (their own spec())."""
        if type(self).__call__ is Constraint.__call__:
            raise NotImplementedError
        return ("function", self)

    def get_config(self):
        return {}

    @classmethod
    def from_config(cls, config):
        return cls(**config)


def _axes(axis, owner):
    axes = axis if isinstance(axis, (list, tuple)) else [axis]
    try:
        return tuple(int(a) for a in axes)
    except (TypeError, ValueError):
        raise ValueError(f"{owner}: argument axis must be an int or a list of ints, got "
                         f"{axis!r}") from None


class MinMaxNorm(Constraint):
    """Norms along `axis` kept in [min_value, max_value], moved there at `rate`."""

    def __init__(self, min_value=0.0, max_value=1.0, rate=1.0, axis=0):
        self.min_value, self.max_value, self.rate = float(min_value), float(max_value), float(rate)
        self.axis = axis
        _axes(axis, type(self).__name__)

    def _bounds(self):
        return self.min_value, self.max_value, self.rate

    def __call__(self, w):
        w = np.asarray(w, dtype=np.float32)
        norms = np.sqrt(np.sum(np.square(w), axis=_axes(self.axis, ""), keepdims=True))
        low, high, rate = self._bounds()
        desired = rate * np.clip(norms, low, high) + (1 - rate) * norms
        return w * (desired / (backend.epsilon() + norms))

    def spec(self):
        return ("norm", *self._bounds(), _axes(self.axis, type(self).__name__))

    def get_config(self):
        return {"min_value": self.min_value, "max_value": self.max_value, "rate": self.rate,
                "axis": self.axis}


class MaxNorm(MinMaxNorm):
    """Norms along `axis` at most `max_value` (2)."""

    def __init__(self, max_value=2, axis=0):
        super().__init__(0.0, max_value, 1.0, axis)

    def get_config(self):
        return {"max_value": self.max_value, "axis": self.axis}


class UnitNorm(MinMaxNorm):
    """Norms along `axis` equal to 1."""

    def __init__(self, axis=0):
        super().__init__(1.0, 1.0, 1.0, axis)

    def get_config(self):
        return {"axis": self.axis}


class NonNeg(Constraint):
    """Negative weights set to 0."""

    def __call__(self, w):
        return np.maximum(np.asarray(w, dtype=np.float32), 0)

    def spec(self):
        return ("non_neg",)


max_norm, min_max_norm, non_neg, unit_norm = MaxNorm, MinMaxNorm, NonNeg, UnitNorm
ALL = {"MaxNorm": MaxNorm, "MinMaxNorm": MinMaxNorm, "NonNeg": NonNeg, "UnitNorm": UnitNorm,
       "max_norm": MaxNorm, "min_max_norm": MinMaxNorm, "non_neg": NonNeg,
       "unit_norm": UnitNorm}


def serialize(constraint):
    """Keras 3's config of a constraint; a user's subclass as Keras writes it (its module, its
    registered name or class name)."""
    if type(constraint) in ALL.values():
        return {"module": "keras.constraints", "class_name": type(constraint).__name__,
                "config": constraint.get_config(), "registered_name": None}
    from .saving.serialization import serialize_keras_object

    config = serialize_keras_object(constraint)
    config["registered_name"] = config["registered_name"] or type(constraint).__name__
    return config


def deserialize(config, custom_objects=None):
    from .saving.serialization import _user_object

    objects = {**ALL, **(custom_objects or {})}
    name = config.get("class_name")
    user = _user_object(config, custom_objects)  # registered, or in a custom_object_scope
    if user is not None:
        return user.from_config(config.get("config", {}))
    if name not in objects:
        raise ValueError(f"constraint: unknown class_name {name!r}; expected one of "
                         f"{sorted(objects)}")
    return objects[name].from_config(config.get("config", {}))


def get(identifier, context="layer", argument="constraint"):
    """A Constraint from None, a name, a config dict or an instance (error names the layer
    and argument; plain functions cannot be planned)."""
    if identifier is None:
        return None
    if isinstance(identifier, dict):
        return deserialize(identifier)
    if isinstance(identifier, str):
        if identifier not in ALL:
            raise ValueError(f"{context}: argument {argument} must be one of {sorted(ALL)}, "
                             f"got {identifier!r}")
        return ALL[identifier]()
    if isinstance(identifier, type) and issubclass(identifier, Constraint):
        identifier = identifier()
    if isinstance(identifier, Constraint):
        try:
            identifier.spec()
        except NotImplementedError:
            pass
        else:
            return identifier
    raise ValueError(f"{context}: argument {argument} must be one of keras.constraints "
                     f"MaxNorm, MinMaxNorm, NonNeg, UnitNorm, or a keras.constraints."
                     f"Constraint subclass that defines __call__(w), got {identifier!r}")
