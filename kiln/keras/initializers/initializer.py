"""Keras 3's `keras.initializers.Initializer`: the base class of every initializer, kiln's
and the user's."""

import numpy as np


class Initializer:
    """Initializer base class: all Keras initializers inherit from it.

    A subclass implements `__call__(self, shape, dtype=None)`, returning an array of `shape`
    (numpy, or anything numpy can read). To be saved in a model's config it also implements
    `get_config()`; the default `from_config(config)` calls the constructor with the config's
    keys.

    Example:

    ```python
    class ScaledOnes(keras.initializers.Initializer):
        def __init__(self, scale=1.0):
            self.scale = scale

        def __call__(self, shape, dtype=None):
            return self.scale * np.ones(shape, dtype or "float32")

        def get_config(self):
            return {"scale": self.scale}

    layer = keras.layers.Dense(3, kernel_initializer=ScaledOnes(0.5))
    ```
    """

    def __call__(self, shape, dtype=None):
        raise NotImplementedError("Initializer subclasses must implement the `__call__()` "
                                  f"method ({type(self).__name__} does not)")

    def get_config(self):
        return {}

    @classmethod
    def from_config(cls, config):
        return cls(**config)

    def clone(self):
        return type(self).from_config(self.get_config())


def standard_shape(initializer, shape):
    """`shape` as a tuple of ints; the error names the initializer."""
    try:
        return tuple(int(d) for d in shape)
    except TypeError:
        raise ValueError(f"{type(initializer).__name__}: argument shape must be a tuple of "
                         f"ints, got {shape!r}") from None


def standard_dtype(initializer, dtype, floating):
    """The numpy dtype to return: `dtype`, or float32 (Keras's floatx) when None. Random
    initializers ask for a float type, as Keras's random draws do."""
    name = type(initializer).__name__
    try:
        dtype = np.dtype("float32" if dtype is None else getattr(dtype, "name", dtype))
    except TypeError:
        raise ValueError(f"{name}: argument dtype must be a numpy dtype name such as "
                         f"'float32', got {dtype!r}") from None
    if floating and dtype.kind != "f":
        raise ValueError(f"{name}: argument dtype must be a float type (it draws random "
                         f"floats), got {dtype.name!r}")
    return dtype
