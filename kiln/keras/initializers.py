"""Weight initializers with Keras names and fan rules (`keras.initializers`)."""

import numpy as np

_generator = [np.random.default_rng()]


def set_random_seed(seed):
    """Seed the generator used by initializers (and by Dropout layers created afterwards)."""
    _generator[0] = np.random.default_rng(seed)
    np.random.seed(seed)


def _fans(shape):
    """Keras' fan_in / fan_out: conv kernels (kh, kw, in, out) count the receptive field."""
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
                               random_normal, random_uniform)}


def get(identifier, context, argument="initializer"):
    """An initializer from its Keras name or a callable(shape) -> array; errors name the layer
    (`context`) and the argument."""
    if callable(identifier):
        return identifier
    if isinstance(identifier, str) and identifier.lower() in ALL:
        return ALL[identifier.lower()]
    raise ValueError(f"{context}: argument {argument} must be one of {sorted(ALL)} or a "
                     f"callable, got {identifier!r}")
