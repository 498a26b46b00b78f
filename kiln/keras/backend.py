"""Global Keras settings: image data format, fuzz factor and float type.

Initial values come from the Keras config file, `$KERAS_HOME/keras.json`
(or `~/.keras/keras.json` when `KERAS_HOME` is not set), so a config
written for Keras works unchanged. The file is read the first time a
setting is needed, not at import, so importing kiln never touches the
file system and tests can point `KERAS_HOME` elsewhere before use.
"""

import gc
import json
import math
import numbers
import os
import warnings

import numpy as np

_DATA_FORMATS = ("channels_last", "channels_first")
_FLOAT_TYPES = ("float16", "bfloat16", "float32", "float64")
_DEFAULTS = {
    "image_data_format": "channels_last",
    "epsilon": 1e-7,
    "floatx": "float32",
}

# Current settings; None until first needed (then loaded from keras.json).
_settings = None


def _check_data_format(value, context, name="argument data_format"):
    """Returns `value` lower-cased if it is a data format, else raises."""
    data_format = value.lower() if isinstance(value, str) else value
    if data_format not in _DATA_FORMATS:
        raise ValueError(
            f"{context}: {name} must be 'channels_last' or 'channels_first', "
            f"got {value!r}"
        )
    return data_format


def _check_epsilon(value, context, name="argument epsilon"):
    """Returns `value` as a float if it is a positive finite number."""
    is_number = isinstance(value, numbers.Real) and not isinstance(value, bool)
    if not is_number or not math.isfinite(value) or value <= 0:
        raise ValueError(
            f"{context}: {name} must be a positive finite number, "
            f"got {value!r}"
        )
    return float(value)


def _check_floatx(value, context, name="argument floatx"):
    """Returns `value` if it names a supported float type, else raises."""
    if value not in _FLOAT_TYPES:
        expected = ", ".join(repr(t) for t in _FLOAT_TYPES)
        raise ValueError(
            f"{context}: {name} must be one of {expected}, got {value!r}"
        )
    return value


_CHECKS = {
    "image_data_format": _check_data_format,
    "epsilon": _check_epsilon,
    "floatx": _check_floatx,
}


def _config_path():
    """Returns the path of the Keras config file, like Keras does."""
    keras_home = os.environ.get("KERAS_HOME")
    if keras_home:
        keras_dir = os.path.expanduser(keras_home)
    else:
        keras_dir = os.path.join(os.path.expanduser("~"), ".keras")
    return os.path.join(keras_dir, "keras.json")


def _load_settings():
    """Returns the defaults overridden by valid entries of the config file.

    A missing file is normal. An unreadable or malformed file, or an
    invalid value, only produces a warning: a broken config should not
    stop a training script, and the defaults are what Keras would use.
    Unknown keys (e.g. Keras' "backend") are ignored.
    """
    settings = dict(_DEFAULTS)
    path = _config_path()
    try:
        with open(path, encoding="utf-8") as config_file:
            config = json.load(config_file)
    except FileNotFoundError:
        return settings
    except (OSError, ValueError) as error:
        warnings.warn(f"Ignoring Keras config file {path}: {error}", stacklevel=2)
        return settings
    if not isinstance(config, dict):
        warnings.warn(
            f"Ignoring Keras config file {path}: expected a JSON object, "
            f"got {type(config).__name__}",
            stacklevel=2,
        )
        return settings
    for key, check in _CHECKS.items():
        if key not in config:
            continue
        try:
            settings[key] = check(
                config[key], f"Keras config file {path}", name=f"key {key!r}"
            )
        except ValueError as error:
            warnings.warn(f"{error}; using the default {settings[key]!r}", stacklevel=2)
    return settings


def _get(key):
    global _settings
    if _settings is None:
        _settings = _load_settings()
    return _settings[key]


def _set(key, value):
    # Load first, so a later lazy load cannot overwrite an explicit setting.
    _get(key)
    _settings[key] = value


def _reset_for_tests():
    """Forgets all settings so the next access re-reads the config file."""
    global _settings
    _settings = None


def image_data_format():
    """Returns the default image data format convention.

    Returns:
        `'channels_last'` or `'channels_first'`.
    """
    return _get("image_data_format")


def set_image_data_format(data_format):
    """Sets the default image data format convention.

    Args:
        data_format: `'channels_last'` or `'channels_first'` (any case).

    Raises:
        ValueError: If `data_format` is not one of the two values.
    """
    _set(
        "image_data_format",
        _check_data_format(data_format, "set_image_data_format"),
    )


def normalize_data_format(value, layer_name):
    """Resolves a layer's `data_format` argument.

    Args:
        value: `None` (use `image_data_format()`), `'channels_last'` or
            `'channels_first'` (any case).
        layer_name: How to name the layer in errors, e.g.
            `"Conv2D 'conv2d_1'"`.

    Returns:
        `'channels_last'` or `'channels_first'`.

    Raises:
        ValueError: If `value` is not `None` or one of the two values.
    """
    if value is None:
        return image_data_format()
    return _check_data_format(value, layer_name)


def epsilon():
    """Returns the fuzz factor used to avoid division by zero (1e-7)."""
    return _get("epsilon")


def set_epsilon(value):
    """Sets the fuzz factor used to avoid division by zero.

    Args:
        value: A positive finite number.

    Raises:
        ValueError: If `value` is not a positive finite number.
    """
    _set("epsilon", _check_epsilon(value, "set_epsilon", "argument value"))


def floatx():
    """Returns the default float type name, e.g. `'float32'`."""
    return _get("floatx")


def set_floatx(value):
    """Sets the default float type name.

    Args:
        value: One of `'float16'`, `'bfloat16'`, `'float32'`, `'float64'`.

    Raises:
        ValueError: If `value` is not one of those names.
    """
    _set("floatx", _check_floatx(value, "set_floatx", "argument value"))


def clear_session(free_memory=True):
    """Resets the layer name counters, as Keras does: the next Conv2D is 'conv2d' again, and
    frees the compiled plans of every model (each is built again on its next use) and the
    cached oneDNN primitives.

    Settings (data format, epsilon) are kept, as in Keras; so are the models' weights and
    optimizer state.

    Args:
        free_memory: as Keras: also collect garbage (models dropped in reference cycles).
    """
    from ..binding.primitive import primitive_cache
    from ..plan import plan_cache
    from .layers import base_layer  # the front end's layers depend on this module, not back

    base_layer.reset_names()
    plan_cache.release_all()
    primitive_cache.clear()
    if free_memory:
        gc.collect()


# Keras 2's tensor functions (K.mean, K.batch_dot, K.function, ...) live in backend_ops.py and
# backend_functions.py, which import keras.ops; they are looked up on first use, because the
# layers keras.ops depends on import this module for the settings above.
_LAZY_MODULES = ("backend_ops", "backend_functions")


def __getattr__(name):
    import importlib

    for module_name in _LAZY_MODULES:
        module = importlib.import_module(f"{__package__}.{module_name}")
        if name in getattr(module, "__all__", ()):
            return getattr(module, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    import importlib

    names = set(globals())
    for module_name in _LAZY_MODULES:
        names.update(importlib.import_module(f"{__package__}.{module_name}").__all__)
    return sorted(names)


def get_value(x):
    """Returns the value of a variable as a numpy array (Keras 2's `K.get_value`).

    Works on `optimizer.learning_rate` / `optimizer.lr`, `optimizer.iterations`, layer
    weights and anything numpy can convert.
    """
    if hasattr(x, "numpy"):
        return x.numpy()
    return np.asarray(x)


def set_value(x, value):
    """Sets the value of a variable (Keras 2's `K.set_value`), e.g.
    `set_value(model.optimizer.lr, 0.5)`.

    Raises:
        TypeError: If `x` is not a variable (has no `assign`), or if it is the learning rate
            of an optimizer that follows a schedule.
    """
    if not hasattr(x, "assign"):
        raise TypeError(f"set_value: argument x must be a variable (with an assign method), "
                        f"got {type(x).__name__}")
    x.assign(np.asarray(value))
