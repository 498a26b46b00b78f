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


def orthogonal(shape, gain=1.0, rng=None):
    """Keras's Orthogonal: the Q of a QR decomposition of a normal matrix (rows: the product
    of all but the last axis), signs fixed by R's diagonal, times `gain`."""
    rng = rng or _generator[0]
    rows, columns = int(np.prod(shape[:-1])), shape[-1]
    values = rng.normal(0.0, 1.0, (max(rows, columns), min(rows, columns)))
    q, r = np.linalg.qr(values)
    q *= np.sign(np.diag(r))
    if rows < columns:
        q = q.T
    return (gain * q).reshape(shape).astype(np.float32)


def _truncated_normal(shape, stddev, rng=None, rescale=True):
    # Keras draws from a normal truncated at 2 stddev; the variance-scaling initializers
    # rescale it to keep the variance (TruncatedNormal does not).
    rng = rng or _generator[0]
    values = rng.normal(0.0, 1.0, shape)
    while True:
        outside = np.abs(values) > 2.0
        if not outside.any():
            break
        values[outside] = rng.normal(0.0, 1.0, int(outside.sum()))
    return (values * (stddev / 0.87962566103423978 if rescale else stddev)).astype(np.float32)


# -- Keras 3's initializer classes (`keras.initializers.RandomNormal(stddev=0.001)`) ----------
class Initializer:
    """Keras 3's initializer base class: `initializer(shape, dtype=None)` returns the float32
    values; `get_config()` / `from_config()` round-trip its arguments. A subclass a user
    writes needs only `__call__` (and `get_config` to be saved)."""

    def __call__(self, shape, dtype=None):
        raise NotImplementedError(f"{type(self).__name__} must define __call__(shape, dtype)")

    def get_config(self):
        return {}

    @classmethod
    def from_config(cls, config):
        return cls(**config)

    def clone(self):
        return type(self).from_config(self.get_config())


def _checked_dtype(initializer, dtype):
    if dtype is not None and np.dtype(dtype) != np.float32:
        raise ValueError(f"{type(initializer).__name__}: argument dtype must be float32 (kiln's "
                         f"weights are float32), got {dtype!r}")


class _Seeded(Initializer):
    """A random initializer: with `seed` every call draws the same values (as Keras 3);
    without, it draws from kiln's generator (`set_random_seed`)."""

    def __init__(self, seed=None):
        if seed is not None and not isinstance(seed, (int, np.integer)):
            raise ValueError(f"{type(self).__name__}: argument seed must be an int or None, "
                             f"got {seed!r}")
        self.seed = seed

    def rng(self):
        return _generator[0] if self.seed is None else np.random.default_rng(self.seed)

    def get_config(self):
        return {"seed": self.seed}


class Constant(Initializer):
    def __init__(self, value=0.0):
        self.value = float(value)

    def __call__(self, shape, dtype=None):
        _checked_dtype(self, dtype)
        return np.full(shape, self.value, dtype=np.float32)

    def get_config(self):
        return {"value": self.value}


class Zeros(Initializer):
    def __call__(self, shape, dtype=None):
        _checked_dtype(self, dtype)
        return zeros(shape)


class Ones(Initializer):
    def __call__(self, shape, dtype=None):
        _checked_dtype(self, dtype)
        return ones(shape)


class RandomNormal(_Seeded):
    def __init__(self, mean=0.0, stddev=0.05, seed=None):
        super().__init__(seed)
        self.mean, self.stddev = float(mean), float(stddev)

    def __call__(self, shape, dtype=None):
        _checked_dtype(self, dtype)
        return self.rng().normal(self.mean, self.stddev, shape).astype(np.float32)

    def get_config(self):
        return {**super().get_config(), "mean": self.mean, "stddev": self.stddev}


class RandomUniform(_Seeded):
    def __init__(self, minval=-0.05, maxval=0.05, seed=None):
        super().__init__(seed)
        self.minval, self.maxval = float(minval), float(maxval)

    def __call__(self, shape, dtype=None):
        _checked_dtype(self, dtype)
        return self.rng().uniform(self.minval, self.maxval, shape).astype(np.float32)

    def get_config(self):
        return {**super().get_config(), "minval": self.minval, "maxval": self.maxval}


class TruncatedNormal(_Seeded):
    """A normal cut at two standard deviations (not rescaled, as Keras 3)."""

    def __init__(self, mean=0.0, stddev=0.05, seed=None):
        super().__init__(seed)
        self.mean, self.stddev = float(mean), float(stddev)

    def __call__(self, shape, dtype=None):
        _checked_dtype(self, dtype)
        return self.mean + _truncated_normal(shape, self.stddev, self.rng(), rescale=False)

    def get_config(self):
        return {**super().get_config(), "mean": self.mean, "stddev": self.stddev}


class VarianceScaling(_Seeded):
    """Keras 3's rule: variance `scale / fan` (fan_in, fan_out or their mean), drawn from a
    rescaled truncated normal, a normal or a uniform."""

    MODES = ("fan_in", "fan_out", "fan_avg")
    DISTRIBUTIONS = ("truncated_normal", "untruncated_normal", "uniform")

    def __init__(self, scale=1.0, mode="fan_in", distribution="truncated_normal", seed=None,
                 input_axes=None, output_axes=None):
        super().__init__(seed)
        name = type(self).__name__
        if not scale > 0:
            raise ValueError(f"{name}: argument scale must be a positive float, got {scale!r}")
        if mode not in self.MODES:
            raise ValueError(f"{name}: argument mode must be one of {self.MODES}, got {mode!r}")
        distribution = str(distribution).lower()
        distribution = "truncated_normal" if distribution == "normal" else distribution
        if distribution not in self.DISTRIBUTIONS:
            raise ValueError(f"{name}: argument distribution must be one of "
                             f"{self.DISTRIBUTIONS}, got {distribution!r}")
        if input_axes is not None or output_axes is not None:
            raise ValueError(f"{name}: arguments input_axes / output_axes are not supported "
                             "yet; expected None (the last two axes)")
        self.scale, self.mode, self.distribution = float(scale), mode, distribution

    def __call__(self, shape, dtype=None):
        _checked_dtype(self, dtype)
        fan_in, fan_out = _fans(shape)
        fan = {"fan_in": fan_in, "fan_out": fan_out, "fan_avg": (fan_in + fan_out) / 2}[self.mode]
        variance = self.scale / max(1.0, fan)
        if self.distribution == "truncated_normal":
            return _truncated_normal(shape, np.sqrt(variance), self.rng())
        if self.distribution == "untruncated_normal":
            return self.rng().normal(0.0, np.sqrt(variance), shape).astype(np.float32)
        limit = np.sqrt(3.0 * variance)
        return self.rng().uniform(-limit, limit, shape).astype(np.float32)

    def get_config(self):
        return {**super().get_config(), "scale": self.scale, "mode": self.mode,
                "distribution": self.distribution, "input_axes": None, "output_axes": None}


class _FixedVarianceScaling(VarianceScaling):
    """GlorotUniform and friends: VarianceScaling with the class's (scale, mode,
    distribution); their config holds the seed only."""

    ARGS = ()

    def __init__(self, seed=None, input_axes=None, output_axes=None):
        super().__init__(*self.ARGS, seed, input_axes, output_axes)

    def get_config(self):
        return {"seed": self.seed, "input_axes": None, "output_axes": None}


class GlorotUniform(_FixedVarianceScaling):
    ARGS = (1.0, "fan_avg", "uniform")


class GlorotNormal(_FixedVarianceScaling):
    ARGS = (1.0, "fan_avg", "truncated_normal")


class LecunUniform(_FixedVarianceScaling):
    ARGS = (1.0, "fan_in", "uniform")


class LecunNormal(_FixedVarianceScaling):
    ARGS = (1.0, "fan_in", "truncated_normal")


class HeUniform(_FixedVarianceScaling):
    ARGS = (2.0, "fan_in", "uniform")


class HeNormal(_FixedVarianceScaling):
    ARGS = (2.0, "fan_in", "truncated_normal")


class Orthogonal(_Seeded):
    def __init__(self, gain=1.0, seed=None):
        super().__init__(seed)
        self.gain = float(gain)

    def __call__(self, shape, dtype=None):
        _checked_dtype(self, dtype)
        if len(shape) < 2:
            raise ValueError(f"Orthogonal: the shape must have at least two axes, got "
                             f"{tuple(shape)}")
        return orthogonal(shape, self.gain, self.rng())

    def get_config(self):
        return {**super().get_config(), "gain": self.gain}


class Identity(Initializer):
    """`gain` times the identity matrix (2D shapes only, as Keras 3): IRNN's recurrent
    kernel, net2net's deeper Dense."""

    def __init__(self, gain=1.0):
        self.gain = float(gain)

    def __call__(self, shape, dtype=None):
        _checked_dtype(self, dtype)
        if len(shape) != 2:
            raise ValueError(f"Identity: the identity matrix initializer can only be used for "
                             f"2D matrices, got shape {tuple(shape)} of rank {len(shape)}")
        return (self.gain * np.eye(*shape)).astype(np.float32)

    def get_config(self):
        # Keras 3 writes {} and so loses a gain; {"gain": g} loads in Keras 3 as well
        return {"gain": self.gain}


IdentityInitializer, OrthogonalInitializer = Identity, Orthogonal
CLASSES = {cls.__name__: cls for cls in (
    Constant, Zeros, Ones, RandomNormal, RandomUniform, TruncatedNormal, VarianceScaling,
    GlorotUniform, GlorotNormal, LecunUniform, LecunNormal, HeUniform, HeNormal, Orthogonal,
    Identity)}
CLASSES.update(IdentityInitializer=Identity, OrthogonalInitializer=Orthogonal)


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
    """Keras 3's config dict of an initializer of this module (function or class instance)."""
    if isinstance(initializer, Initializer):
        return {"module": "keras.initializers", "class_name": type(initializer).__name__,
                "config": initializer.get_config(), "registered_name": None}
    name = getattr(initializer, "__name__", None)
    if ALL.get(name) is not initializer:
        raise ValueError(f"initializers.serialize: {initializer!r} is not one of kiln's "
                         f"initializers {sorted(ALL)} nor a keras.initializers class "
                         "instance, so it cannot be saved in a config")
    class_name, config = KERAS_CLASSES[name]
    return {"module": "keras.initializers", "class_name": class_name, "config": dict(config),
            "registered_name": None}


def _from_config(identifier, context, argument):
    """A Keras 3 / Keras 2 config dict: the class by name. Default values give the plain
    function; other values (RandomNormal with stddev=0.001, a seed) an instance of the
    class."""
    class_name = identifier.get("class_name")
    config = identifier.get("config") or {}
    if class_name == "VarianceScaling":  # how Keras 2.0-2.2 saved glorot_* and he_*
        return _variance_scaling(config, context, argument)
    name = _BY_CLASS_NAME.get(class_name) or (class_name if class_name in ALL else None)
    if name is not None and all(KERAS_CLASSES[name][1].get(key, key) == value
                                for key, value in config.items()):
        return ALL[name]
    if class_name not in CLASSES:
        raise ValueError(f"{context}: argument {argument} has an unknown initializer class "
                         f"{class_name!r}; expected one of {sorted(CLASSES)}")
    return _instance(CLASSES[class_name], config, context, argument)


def _instance(cls, config, context, argument):
    try:
        return cls.from_config(config)
    except (TypeError, ValueError) as err:
        raise ValueError(f"{context}: argument {argument}: {cls.__name__} with config "
                         f"{config!r}: {err}") from err


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
    if key in _VARIANCE_SCALING and config.get("seed") is None:
        return ALL[_VARIANCE_SCALING[key]]
    return _instance(VarianceScaling, config, context, argument)


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
    if isinstance(identifier, str) and identifier in CLASSES:  # "Identity", "LecunNormal"
        return CLASSES[identifier]()
    if isinstance(identifier, str) and identifier.lower() in _SNAKE_NAMES:  # "identity"
        return CLASSES[_SNAKE_NAMES[identifier.lower()]]()
    raise ValueError(f"{context}: argument {argument} must be one of "
                     f"{sorted(set(ALL) | set(_SNAKE_NAMES))}, a Keras initializer class name "
                     f"or instance, or a callable, got {identifier!r}")


# Keras's snake_case names of classes kiln has no plain function for
_SNAKE_NAMES = {"identity": "Identity", "constant": "Constant",
                "truncated_normal": "TruncatedNormal", "lecun_normal": "LecunNormal",
                "lecun_uniform": "LecunUniform", "variance_scaling": "VarianceScaling"}
