"""`keras.initializers`: Keras 3's initializer classes, their lowercase aliases (the same
classes: `glorot_uniform(seed=0)`), and `get` / `serialize` / `deserialize` with Keras 3's
config dicts ({"module", "class_name", "config", "registered_name"}).

`get` is what every layer's `*_initializer` argument goes through: a name, a config dict, an
`Initializer` class or instance, an array of the weight's shape, or a callable
`(shape, dtype=None) -> array`. A user's `Initializer` subclass or function is found by the
name it was registered under (`keras.saving.register_keras_serializable`) or given in
`custom_objects`; nothing is imported by module path.
"""

import inspect

import numpy as np

from ..saving import serialization
from .constant_initializers import Constant, Identity, Ones, Zeros
from .initializer import Initializer
from .random_initializers import (
    GlorotNormal,
    GlorotUniform,
    HeNormal,
    HeUniform,
    LecunNormal,
    LecunUniform,
    Orthogonal,
    RandomInitializer,
    RandomNormal,
    RandomUniform,
    TruncatedNormal,
    VarianceScaling,
    compute_fans,
)
from .seeds import _generator, set_random_seed  # noqa: F401  (old import path)

# Keras's lowercase names are the classes themselves
constant, identity, ones, zeros = Constant, Identity, Ones, Zeros
glorot_normal, glorot_uniform, he_normal, he_uniform = (GlorotNormal, GlorotUniform, HeNormal,
                                                        HeUniform)
lecun_normal, lecun_uniform, orthogonal = LecunNormal, LecunUniform, Orthogonal
random_normal, random_uniform, truncated_normal = RandomNormal, RandomUniform, TruncatedNormal
variance_scaling = VarianceScaling
IdentityInitializer, OrthogonalInitializer = Identity, Orthogonal

_CLASSES = (Initializer, Constant, Identity, Ones, Zeros, GlorotNormal, GlorotUniform, HeNormal,
            HeUniform, LecunNormal, LecunUniform, Orthogonal, RandomNormal, RandomUniform,
            TruncatedNormal, VarianceScaling)
_SNAKE_CASE = {Initializer: "initializer", Constant: "constant", Identity: "identity",
               Ones: "ones", Zeros: "zeros", GlorotNormal: "glorot_normal",
               GlorotUniform: "glorot_uniform", HeNormal: "he_normal", HeUniform: "he_uniform",
               LecunNormal: "lecun_normal", LecunUniform: "lecun_uniform",
               Orthogonal: "orthogonal", RandomNormal: "random_normal",
               RandomUniform: "random_uniform", TruncatedNormal: "truncated_normal",
               VarianceScaling: "variance_scaling"}
# every name Keras 3's `get` / `deserialize` know (keras/src/initializers/__init__.py)
ALL_OBJECTS_DICT = {**{cls.__name__: cls for cls in _CLASSES},
                    **{name: cls for cls, name in _SNAKE_CASE.items()},
                    "IdentityInitializer": Identity, "OrthogonalInitializer": Orthogonal,
                    "normal": RandomNormal, "uniform": RandomUniform, "one": Ones, "zero": Zeros}

__all__ = ["Initializer", "RandomInitializer", "compute_fans", "deserialize", "get",
           "initial_values", "serialize", "set_random_seed",
           *(cls.__name__ for cls in _CLASSES[1:]), *list(_SNAKE_CASE.values())[1:],
           "IdentityInitializer", "OrthogonalInitializer"]


def serialize(initializer):
    """Keras 3's config dict of an initializer: kiln's classes under "keras.initializers", a
    user's `Initializer` subclass under its module and registered name (its class name if not
    registered, as Keras 3 writes it), a function by its name."""
    if initializer is None:
        return None
    if inspect.isfunction(initializer):
        return serialization.serialize_keras_object(initializer)
    cls = type(initializer)
    if cls.__module__.startswith(__name__ + "."):
        return {"module": "keras.initializers", "class_name": cls.__name__,
                "config": initializer.get_config(), "registered_name": None}
    if not hasattr(initializer, "get_config"):
        raise ValueError(f"initializers.serialize: {initializer!r} has no get_config(), so it "
                         "cannot be saved in a config; subclass keras.initializers.Initializer "
                         "and define get_config()")
    module = None if cls.__module__ == "__main__" else cls.__module__
    return {"module": module, "class_name": cls.__name__, "config": initializer.get_config(),
            "registered_name": serialization.get_registered_name(cls)}


def deserialize(config, custom_objects=None):
    """The initializer a config names: a dict as Keras 3 (or Keras 2: no "module") writes it,
    or a name. A user's class or function resolves from `custom_objects`, the active
    `custom_object_scope` or the registry."""
    return _deserialize(config, custom_objects, None, "initializer")


def get(identifier, context=None, argument="initializer"):
    """An initializer from its identifier, as Keras 3's `keras.initializers.get`: None, a
    name, a config dict, an Initializer class (instantiated) or instance, an array (the
    values, for a weight of its shape) or a callable. Errors name the layer (`context`) and
    the argument when given."""
    if identifier is None:
        return None
    if isinstance(identifier, (str, dict)):
        return _deserialize(identifier, None, context, argument)
    if isinstance(identifier, (np.ndarray, np.generic)):
        return _fixed_values(np.asarray(identifier))
    if inspect.isclass(identifier):
        return _instance(identifier, {}, context, argument)
    if callable(identifier):
        return identifier
    raise ValueError(f"{_where(context, argument)}Could not interpret initializer identifier: "
                     f"{identifier!r}; expected a name such as 'glorot_uniform', a config "
                     "dict, a keras.initializers.Initializer or a callable (shape, dtype)")


def _where(context, argument):
    return f"{context}: argument {argument}: " if context else ""


def _deserialize(config, custom_objects, context, argument):
    if isinstance(config, str):
        config = {"class_name": config, "config": {}}
    if not isinstance(config, dict) or not isinstance(config.get("class_name"), str):
        raise ValueError(f"{_where(context, argument)}Could not interpret initializer "
                         f"identifier: {config!r}; expected a config dict with a 'class_name'")
    class_name, inner = config["class_name"], config.get("config") or {}
    if class_name == "function":  # a user's function, saved by its (registered) name
        found = serialization.get_registered_object(inner, custom_objects)
        if found is None:
            raise ValueError(f"{_where(context, argument)}unknown initializer function "
                             f"{inner!r}; register it with keras.saving."
                             "register_keras_serializable() or pass it in custom_objects")
        return found
    cls = None
    for key in (config.get("registered_name"), class_name):
        if isinstance(key, str) and cls is None:
            cls = serialization.get_registered_object(key, custom_objects, ALL_OBJECTS_DICT)
    if cls is None:
        raise ValueError(f"{_where(context, argument)}Could not interpret initializer "
                         f"identifier: {class_name!r}; kiln knows {sorted(ALL_OBJECTS_DICT)}, "
                         "and a user's initializer registered with keras.saving."
                         "register_keras_serializable() or passed in custom_objects")
    if cls in _CLASSES and "dtype" in inner:  # tf.keras 1.x wrote the dtype into the config
        inner = {key: value for key, value in inner.items() if key != "dtype"}
    return _instance(cls, inner, context, argument)


def _instance(cls, config, context, argument):
    """`cls.from_config(config)`; a bad argument keeps its error type (ValueError for a bad
    value, TypeError for an unknown key), and the message names the layer and the class."""
    if not hasattr(cls, "from_config"):  # a plain function registered under the name
        return cls
    try:
        # an empty config (a name) is the defaults, as Keras's deserialization makes it
        return cls.from_config(dict(config)) if config else cls()
    except (TypeError, ValueError) as error:
        prefix = _where(context, argument) or "initializers: "
        raise type(error)(f"{prefix}{cls.__name__} with config {config!r}: {error}") from error


def _fixed_values(values):
    """Keras's initializer for an array: the array itself, for a weight of its shape."""

    def initialize_fn(shape, dtype=None):
        if tuple(shape) != values.shape:
            raise ValueError(f"Expected `shape` to be {values.shape} for direct tensor as "
                             f"initializer. Received shape={tuple(shape)}")
        return values.astype(dtype or "float32")

    return initialize_fn


def initial_values(initializer, shape):
    """The initializer's values for `shape`. As Keras's variables, a callable that takes a
    `dtype` is asked for float32; one that takes the shape only (a lambda) is called so. None
    is glorot_uniform, Keras's default for a float weight."""
    if initializer is None:
        initializer = GlorotUniform()
    try:
        parameters = inspect.signature(initializer).parameters
    except (TypeError, ValueError):  # a builtin without a signature
        return initializer(shape)
    if "dtype" in parameters or any(p.kind is p.VAR_KEYWORD for p in parameters.values()):
        return initializer(shape, dtype="float32")
    return initializer(shape)
