"""Keras object serialization (`keras.saving.serialize_keras_object` / `deserialize_...`) and
the registry of user objects (`register_keras_serializable`, `custom_object_scope`).

A saved model names its parts by class: {"module", "class_name", "config",
"registered_name"}, as Keras 3 writes them (keras/src/saving/serialization_lib.py). Loading must
never run code from a file, so a class name is only ever looked up in tables: kiln's own layers
(and its optimizers, losses, metrics, regularizers, constraints through their modules), then
the objects the user registered or passed as `custom_objects`. Nothing is imported by module
path and nothing is unpickled; `module` is informative only. A `Lambda` layer whose config
holds a Python lambda (bytecode) is refused unless the caller passes safe_mode=False, as Keras.
"""

import contextlib
import inspect
import threading
import types

# "package>name" -> class or function, and the object -> its registered name
_REGISTERED = {}
_REGISTERED_NAMES = {}
_KERAS_MODULES = {}  # kiln's classes Keras registers outside its public modules -> Keras's module
_scopes = threading.local()


def register_keras_serializable(package="Custom", name=None):
    """Decorator registering a class or function under "package>name" so that configs naming it
    deserialize (Keras 3's `keras.saving.register_keras_serializable`)."""

    def decorator(obj):
        registered_name = f"{package}>{name if name is not None else obj.__name__}"
        if inspect.isclass(obj) and not hasattr(obj, "get_config"):
            raise ValueError(f"register_keras_serializable: the class {obj.__name__} must "
                             "implement get_config() to be serializable")
        _REGISTERED[registered_name] = obj
        _REGISTERED_NAMES[obj] = registered_name
        return obj

    return decorator


def register_keras_class(cls, keras_module):
    """Registers one of kiln's layer classes that Keras keeps outside keras.layers (ConvNeXt's
    LayerScale) as Keras saves it: under its bare class name, from `keras_module`, so configs
    load both ways."""
    _REGISTERED[cls.__name__] = cls
    _REGISTERED_NAMES[cls] = cls.__name__
    _KERAS_MODULES[cls] = keras_module
    return cls


def get_registered_name(obj):
    """The name `obj` was registered under, or its own name."""
    return _REGISTERED_NAMES.get(obj, getattr(obj, "__name__", None))


def get_custom_objects():
    """The global registry (registered name -> object), as Keras's."""
    return _REGISTERED


@contextlib.contextmanager
def custom_object_scope(custom_objects):
    """Within the block, `custom_objects` ({name: class or function}) resolve by name."""
    stack = getattr(_scopes, "stack", None)
    if stack is None:
        stack = _scopes.stack = []
    stack.append(dict(custom_objects or {}))
    try:
        yield
    finally:
        stack.pop()


CustomObjectScope = custom_object_scope


def get_registered_object(name, custom_objects=None, module_objects=None):
    """The object for `name`: from `custom_objects`, the active scopes, the registry, then
    `module_objects` (kiln's own table for the kind of object); None if unknown."""
    for table in (custom_objects or {}, *reversed(getattr(_scopes, "stack", None) or []),
                  _REGISTERED, module_objects or {}):
        if name in table:
            return table[name]
    return None


def _user_object(config, custom_objects):
    """A class or function the user registered or passed, named by a config."""
    for key in (config.get("registered_name"), config.get("class_name")):
        if isinstance(key, str):
            found = get_registered_object(key, custom_objects)
            if found is not None:
                return found
    return None


# -- serialization ----------------------------------------------------------------------------
def serialize_keras_object(obj):
    """Keras 3's config dict of a kiln layer, model, optimizer, loss, metric, regularizer or
    constraint, of a registered function, or plain data (returned as is)."""
    if obj is None or isinstance(obj, (bool, int, float, str)):
        return obj
    if isinstance(obj, (list, tuple)):
        return [serialize_keras_object(item) for item in obj]
    if isinstance(obj, dict):
        return {key: serialize_keras_object(value) for key, value in obj.items()}
    if isinstance(obj, types.FunctionType):
        return _serialize_function(obj)
    from .. import initializers

    if isinstance(obj, initializers.Initializer):
        return initializers.serialize(obj)
    registered = _REGISTERED_NAMES.get(type(obj))
    if not hasattr(obj, "get_config"):
        raise TypeError(f"serialize_keras_object: cannot serialize {obj!r} of type "
                        f"{type(obj).__name__}: it has no get_config()")
    from ..layers.base_layer import Layer

    own = type(obj).__name__ in _layer_table() or type(obj).__name__ in (
        "Sequential", "Functional")
    if registered is None and isinstance(obj, Layer) and not own:
        # a user's layer class, not registered: Keras 3 saves it under its class name, and
        # loading it then needs the class in custom_objects (or a custom_object_scope)
        registered = type(obj).__name__
    module = _KERAS_MODULES.get(type(obj)) or (type(obj).__module__ if registered
                                                else _public_module(obj))
    config = {"module": None if module == "__main__" else module,  # as Keras writes it
              "class_name": type(obj).__name__, "config": obj.get_config(),
              "registered_name": registered}
    if type(obj).__name__ == "Functional" and not _REGISTERED_NAMES.get(type(obj)):
        # where Keras 3 keeps the class, under the name it registers it with
        config["module"], config["registered_name"] = "keras.src.models.functional", "Functional"
    return config


def _serialize_function(fn):
    registered = _REGISTERED_NAMES.get(fn)
    if registered is not None:
        return {"module": fn.__module__, "class_name": "function", "config": registered,
                "registered_name": registered}
    if fn.__name__ == "<lambda>":
        raise ValueError("serialize_keras_object: a lambda cannot be saved; define a named "
                         "function and register it with register_keras_serializable()")
    # Keras's own functions (losses, metrics, activations) and, as Keras 3 writes them, a
    # user's unregistered ones: by name (loading then needs it in custom_objects)
    return {"module": "builtins", "class_name": "function", "config": fn.__name__,
            "registered_name": "function"}


def _public_module(obj):
    module = type(obj).__module__
    for kind in ("layers", "optimizers", "losses", "metrics", "regularizers", "constraints"):
        if f".keras.{kind}" in module:
            return f"keras.{kind}"
    if ".keras.models" in module:
        return "keras"
    return module


# -- deserialization --------------------------------------------------------------------------
def _layer_table():
    from .. import layers

    return {name: value for name, value in vars(layers).items()
            if inspect.isclass(value) and issubclass(value, layers.Layer)}


def layer_class(config, custom_objects=None, safe_mode=True, where="config"):
    """The class a layer config names, from kiln's layers or the user's registered ones; a
    ValueError naming the layer otherwise (Lambda refused: its config holds code)."""
    if not isinstance(config, dict) or not isinstance(config.get("class_name"), str):
        raise ValueError(f"{where}: expected a layer config with a 'class_name', got "
                         f"{_short(config)}")
    class_name = config["class_name"]
    inner = config.get("config")
    layer_name = inner.get("name") if isinstance(inner, dict) else None
    label = f"layer '{layer_name}' (class {class_name})" if layer_name else f"class {class_name}"
    from ..models import Model, Sequential
    from ..models.model import Functional

    cls = _user_object(config, custom_objects)
    if cls is None:
        models = {"Sequential": Sequential, "Functional": Functional, "Model": Functional}
        cls = models.get(class_name) or _layer_table().get(class_name)
    if cls is None:
        raise ValueError(
            f"{where}: {label} is not a kiln layer; layers of other classes need the class "
            "registered with keras.saving.register_keras_serializable() or passed in "
            "custom_objects (a custom layer written with keras.ops then loads)")
    if not (inspect.isclass(cls) and issubclass(cls, (Model, _layer_table()["Layer"]))):
        raise ValueError(f"{where}: {label} resolves to {cls!r}, which is not a kiln layer")
    return cls


def deserialize_layer(config, custom_objects=None, safe_mode=True, where="config"):
    """A layer or model from its Keras 3 (or Keras 2: no 'module') config."""
    cls = layer_class(config, custom_objects, safe_mode, where)
    inner = config.get("config")
    if config["class_name"] == "Sequential" and isinstance(inner, list):
        inner = {"layers": inner}  # Keras 2.0 / 2.1 wrote a Sequential's config as its layers
    if not isinstance(inner, dict):
        raise ValueError(f"{where}: the config of class {config['class_name']} must be a dict, "
                         f"got {_short(inner)}")
    from ..models import Model

    try:
        if issubclass(cls, Model) or config["class_name"] == "Lambda":
            return cls.from_config(dict(inner), custom_objects=custom_objects,
                                   safe_mode=safe_mode)
        # the custom objects in scope: a layer's arguments may name them (an activation)
        with custom_object_scope(custom_objects or {}):
            return cls.from_config(dict(inner))
    except (TypeError, ValueError, KeyError, IndexError) as error:
        name = inner.get("name", "?")
        raise ValueError(f"{where}: layer '{name}' (class {config['class_name']}) cannot be "
                         f"made from its config: {error}") from error


def deserialize_keras_object(config, custom_objects=None, safe_mode=True, **kwargs):
    """A kiln object from a Keras config: layers and models, optimizers, losses and metrics by
    class name, registered functions by name; plain data as is."""
    del kwargs  # Keras's module_objects / printable_module_name: kiln resolves by its tables
    if config is None or isinstance(config, (bool, int, float, str, list)):
        return config
    if not isinstance(config, dict) or "class_name" not in config:
        raise ValueError(f"deserialize_keras_object: expected a config dict with a "
                         f"'class_name', got {_short(config)}")
    module = str(config.get("module") or "")
    class_name = config["class_name"]
    if class_name == "function":
        return deserialize_function(config, custom_objects)
    if module.startswith("keras.optimizers"):
        from .. import optimizers

        return optimizers.deserialize(config, custom_objects)
    if module.startswith("keras.losses"):
        return deserialize_loss(config, custom_objects)
    if module.startswith("keras.initializers"):
        from .. import initializers

        return initializers.deserialize(config, custom_objects)
    if module.startswith("keras.metrics"):
        return deserialize_metric(config, custom_objects)
    return deserialize_layer(config, custom_objects, safe_mode, "deserialize_keras_object")


def deserialize_function(config, custom_objects=None):
    """A function saved by name: a registered or custom one, else Keras's losses, metrics and
    activations by their names."""
    name = config.get("config")
    if not isinstance(name, str):
        raise ValueError(f"deserialize_keras_object: a function config needs its name as "
                         f"'config', got {_short(config)}")
    found = get_registered_object(name, custom_objects)
    if found is not None:
        return found
    from .. import activations, losses, metrics

    for module in (losses, metrics, activations):
        candidate = getattr(module, name, None)
        if isinstance(candidate, types.FunctionType):
            return candidate
    raise ValueError(f"deserialize_keras_object: unknown function '{name}'; register it with "
                     "keras.saving.register_keras_serializable() or pass it in custom_objects")


def deserialize_loss(identifier, custom_objects=None):
    """A compile() loss from a saved compile config: a name, a function config or a Loss class
    config."""
    from ..losses import registry

    if isinstance(identifier, str):  # Keras 2's form of a registered function: its name
        return _named(identifier, custom_objects)
    if not isinstance(identifier, dict):
        return identifier
    if identifier.get("class_name") == "function":
        return deserialize_function(identifier, custom_objects)
    cls = _user_object(identifier, custom_objects) or registry.CLASSES.get(
        identifier.get("class_name"))
    if cls is None:
        raise ValueError(f"compile config: unknown loss class {identifier.get('class_name')!r};"
                         f" kiln knows {sorted(registry.CLASSES)}")
    return cls.from_config(dict(identifier.get("config") or {}))


def deserialize_metric(identifier, custom_objects=None):
    """A compile() metric from a saved compile config (names stay names)."""
    from .. import metrics

    if isinstance(identifier, str):  # Keras 2's form of a registered function: its name
        return _named(identifier, custom_objects)
    if not isinstance(identifier, dict):
        return identifier
    if identifier.get("class_name") == "function":
        return deserialize_function(identifier, custom_objects)
    cls = _user_object(identifier, custom_objects) or getattr(
        metrics, str(identifier.get("class_name")), None)
    if not (inspect.isclass(cls) and issubclass(cls, metrics.Metric)):
        raise ValueError(f"compile config: unknown metric class "
                         f"{identifier.get('class_name')!r}")
    inner = dict(identifier.get("config") or {})
    inner.pop("dtype", None)  # float32 always
    return cls(**inner)


def _named(name, custom_objects):
    """A loss or metric named by a string: the user's object registered (or passed) under that
    name, else the name itself (Keras's own losses and metrics resolve in compile())."""
    found = get_registered_object(name, custom_objects)
    return name if found is None else found


def _short(value, limit=120):
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + "..."
