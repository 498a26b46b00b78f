"""`keras.optimizers.get`, `serialize` and `deserialize`: optimizers by name, by config dict
(Keras 3's {"module", "class_name", "config"} and Keras 2's {"class_name", "config"}) or as
instances. Names are case-insensitive, as in Keras ("Adam", "adam", "RMSprop")."""

from .adadelta import Adadelta
from .adagrad import Adagrad
from .adam import Adam
from .adamax import Adamax
from .adamw import AdamW
from .base_optimizer import Optimizer
from .lion import Lion
from .nadam import Nadam
from .rmsprop import RMSprop
from .sgd import SGD

ALL_OPTIMIZERS = {cls.__name__.lower(): cls for cls in (
    SGD, RMSprop, Adam, AdamW, Nadam, Adamax, Adagrad, Adadelta, Lion)}


def serialize(optimizer):
    return {"module": "keras.optimizers", "class_name": type(optimizer).__name__,
            "config": optimizer.get_config(), "registered_name": None}


def deserialize(config, custom_objects=None):
    name = config.get("class_name") if isinstance(config, dict) else None
    custom = {key.lower(): value for key, value in (custom_objects or {}).items()}
    cls = custom.get(str(name).lower()) or ALL_OPTIMIZERS.get(str(name).lower())
    if cls is None:
        raise ValueError(f"optimizers.deserialize: unknown optimizer {name!r}; expected one "
                         f"of {sorted(ALL_OPTIMIZERS)}")
    return cls.from_config(dict(config.get("config") or {}))


def get(identifier):
    """An optimizer from an instance, a name ('adam', 'sgd', ...) or a config dict."""
    if identifier is None or isinstance(identifier, Optimizer):
        return identifier
    if isinstance(identifier, dict):
        return deserialize(identifier)
    if isinstance(identifier, str) and identifier.lower() in ALL_OPTIMIZERS:
        return ALL_OPTIMIZERS[identifier.lower()]()
    raise ValueError(f"compile: argument optimizer must be one of {sorted(ALL_OPTIMIZERS)}, a "
                     f"config dict or an optimizer instance, got {identifier!r}")
