"""Weight initializers with Keras names and fan rules (`keras.initializers`)."""

import numpy as np

_generator = [np.random.default_rng()]


def set_random_seed(seed):
    """Seed the generator used by initializers (and by Dropout layers created afterwards)."""
    _generator[0] = np.random.default_rng(seed)
    np.random.seed(seed)


def _fans(shape):
    """Keras' fan_in / fan_out: conv kernels (kh, kw, in, out) count the receptive field."""
    if not shape:  # a scalar, as Keras: fans of 1
        return 1, 1
    if len(shape) < 2:
        return shape[0], shape[0]
    receptive_field = int(np.prod(shape[:-2])) if len(shape) > 2 else 1
    return shape[-2] * receptive_field, shape[-1] * receptive_field


def zeros(shape):
    return np.zeros(shape, dtype=np.float32)


def ones(shape):
    return np.ones(shape, dtype=np.float32)


def glorot_uniform(shape):
    fan_in, fan_out = _fans(shape)
    limit = np.sqrt(6.0 / (fan_in + fan_out))
    return _generator[0].uniform(-limit, limit, shape).astype(np.float32)


def glorot_normal(shape):
    fan_in, fan_out = _fans(shape)
    return _truncated_normal(shape, np.sqrt(2.0 / (fan_in + fan_out)))


def he_normal(shape):
    return _truncated_normal(shape, np.sqrt(2.0 / _fans(shape)[0]))


def he_uniform(shape):
    limit = np.sqrt(6.0 / _fans(shape)[0])
    return _generator[0].uniform(-limit, limit, shape).astype(np.float32)


def random_normal(shape, stddev=0.05):
    return _generator[0].normal(0.0, stddev, shape).astype(np.float32)


def random_uniform(shape, limit=0.05):
    return _generator[0].uniform(-limit, limit, shape).astype(np.float32)


def orthogonal(shape, gain=1.0):
    """Keras's Orthogonal: the Q of a QR decomposition of a normal matrix (rows: the product
    of all but the last axis), signs fixed by R's diagonal, times `gain`."""
    rows, columns = int(np.prod(shape[:-1])), shape[-1]
    values = _generator[0].normal(0.0, 1.0, (max(rows, columns), min(rows, columns)))
    q, r = np.linalg.qr(values)
    q *= np.sign(np.diag(r))
    if rows < columns:
        q = q.T
    return (gain * q).reshape(shape).astype(np.float32)


def _truncated_normal(shape, stddev):
    # Keras draws from a normal truncated at 2 stddev, rescaled to keep the variance.
    scale = stddev / 0.87962566103423978
    values = _generator[0].normal(0.0, 1.0, shape)
    while True:
        outside = np.abs(values) > 2.0
        if not outside.any():
            break
        values[outside] = _generator[0].normal(0.0, 1.0, int(outside.sum()))
    return (values * scale).astype(np.float32)


ALL = {f.__name__: f for f in (zeros, ones, glorot_uniform, glorot_normal, he_normal, he_uniform,
                               random_normal, random_uniform, orthogonal)}


# Keras 3's class names and default configs, for configs in both directions (a saved model's
# "kernel_initializer": {"class_name": "GlorotUniform", "config": {"seed": null, ...}}).
_FAN_DEFAULTS = {"seed": None, "input_axes": None, "output_axes": None}
KERAS_CLASSES = {
    "zeros": ("Zeros", {}), "ones": ("Ones", {}),
    "glorot_uniform": ("GlorotUniform", _FAN_DEFAULTS),
    "glorot_normal": ("GlorotNormal", _FAN_DEFAULTS),
    "he_normal": ("HeNormal", _FAN_DEFAULTS), "he_uniform": ("HeUniform", _FAN_DEFAULTS),
    "random_normal": ("RandomNormal", {"seed": None, "mean": 0.0, "stddev": 0.05}),
    "random_uniform": ("RandomUniform", {"seed": None, "minval": -0.05, "maxval": 0.05}),
    "orthogonal": ("Orthogonal", {"seed": None, "gain": 1.0}),
}
_BY_CLASS_NAME = {class_name: name for name, (class_name, _) in KERAS_CLASSES.items()}


def serialize(initializer):
    """Keras 3's config dict of an initializer of this module."""
    name = getattr(initializer, "__name__", None)
    if ALL.get(name) is not initializer:
        raise ValueError(f"initializers.serialize: {initializer!r} is not one of kiln's "
                         f"initializers {sorted(ALL)}, so it cannot be saved in a config")
    class_name, config = KERAS_CLASSES[name]
    return {"module": "keras.initializers", "class_name": class_name, "config": dict(config),
            "registered_name": None}


def _from_config(identifier, context, argument):
    """A Keras 3 / Keras 2 config dict: the class by name; its seed is not used (a loaded
    model's weights come from the file), other values must be the defaults kiln implements."""
    class_name = identifier.get("class_name")
    if class_name == "VarianceScaling":  # how Keras 2.0-2.2 saved glorot_* and he_*
        return _variance_scaling(identifier.get("config") or {}, context, argument)
    name = _BY_CLASS_NAME.get(class_name) or (class_name if class_name in ALL else None)
    if name is None:
        raise ValueError(f"{context}: argument {argument} has an unknown initializer class "
                         f"{class_name!r}; expected one of {sorted(_BY_CLASS_NAME)}")
    defaults = KERAS_CLASSES[name][1]
    for key, value in (identifier.get("config") or {}).items():
        if key != "seed" and (key not in defaults or value != defaults[key]):
            raise ValueError(f"{context}: argument {argument}: {class_name} with {key}={value!r}"
                             f" is not supported yet; expected {key}={defaults.get(key)!r}")
    return ALL[name]


# VarianceScaling's (scale, mode, distribution) that are one of kiln's initializers
_VARIANCE_SCALING = {(1.0, "fan_avg", "uniform"): "glorot_uniform",
                     (1.0, "fan_avg", "normal"): "glorot_normal",
                     (1.0, "fan_avg", "truncated_normal"): "glorot_normal",
                     (2.0, "fan_in", "normal"): "he_normal",
                     (2.0, "fan_in", "truncated_normal"): "he_normal",
                     (2.0, "fan_in", "uniform"): "he_uniform"}


def _variance_scaling(config, context, argument):
    key = (float(config.get("scale", 1.0)), config.get("mode", "fan_in"),
           config.get("distribution", "truncated_normal"))
    if key not in _VARIANCE_SCALING:
        raise ValueError(f"{context}: argument {argument}: VarianceScaling with scale, mode, "
                         f"distribution = {key} is not supported yet; kiln has "
                         f"{sorted(set(_VARIANCE_SCALING.values()))}")
    return ALL[_VARIANCE_SCALING[key]]


# Keras's short spellings ('uniform' is Embedding's default initializer)
_SHORT_NAMES = {"uniform": "random_uniform", "normal": "random_normal"}


def get(identifier, context, argument="initializer"):
    """An initializer from its Keras name, a config dict or a callable(shape) -> array; errors
    name the layer (`context`) and the argument."""
    if callable(identifier):
        return identifier
    if isinstance(identifier, dict):
        return _from_config(identifier, context, argument)
    if isinstance(identifier, str) and identifier in _BY_CLASS_NAME:
        return ALL[_BY_CLASS_NAME[identifier]]
    if isinstance(identifier, str) and identifier.lower() in ALL:
        return ALL[identifier.lower()]
    if isinstance(identifier, str) and identifier.lower() in _SHORT_NAMES:
        return ALL[_SHORT_NAMES[identifier.lower()]]
    raise ValueError(f"{context}: argument {argument} must be one of {sorted(ALL)} or a "
                     f"callable, got {identifier!r}")
