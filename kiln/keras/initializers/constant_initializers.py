"""Initializers without randomness (Keras 3's keras/src/initializers/constant_initializers.py):
`Constant`, `Zeros`, `Ones`, `Identity`. Their values equal Keras's exactly."""

import numpy as np

from .initializer import Initializer, standard_dtype, standard_shape


class Constant(Initializer):
    """Fills the tensor with `value` (a Python scalar).

    Example:

    >>> keras.initializers.Constant(10.0)(shape=(2, 2))
    """

    def __init__(self, value=0.0):
        # a numpy scalar is kept as the Python number, so the config stays plain JSON
        self.value = value.item() if isinstance(value, np.generic) else value

    def __call__(self, shape, dtype=None):
        shape, dtype = standard_shape(self, shape), standard_dtype(self, dtype, False)
        return np.full(shape, self.value, dtype=dtype)

    def get_config(self):
        return {"value": self.value}

    @classmethod
    def from_config(cls, config):
        return cls(config["value"])


class Zeros(Initializer):
    """Fills the tensor with 0."""

    def __call__(self, shape, dtype=None):
        return np.zeros(standard_shape(self, shape), standard_dtype(self, dtype, False))


class Ones(Initializer):
    """Fills the tensor with 1."""

    def __call__(self, shape, dtype=None):
        return np.ones(standard_shape(self, shape), standard_dtype(self, dtype, False))


class Identity(Initializer):
    """`gain` times the identity matrix, for 2D shapes only (IRNN's recurrent kernel, net2net's
    deeper Dense). A non-square shape gets ones on its main diagonal, as `np.eye(rows,
    columns)`.

    Keras 3's config of an Identity is `{}`, which loses a gain other than 1: kiln writes
    `{}` for gain 1 (as Keras) and `{"gain": g}` otherwise, which Keras 3 also loads.
    """

    def __init__(self, gain=1.0):
        self.gain = gain

    def __call__(self, shape, dtype=None):
        shape, dtype = standard_shape(self, shape), standard_dtype(self, dtype, False)
        if len(shape) != 2:
            raise ValueError(f"Identity: the identity matrix initializer can only be used for "
                             f"2D matrices. Received: shape={shape} of rank {len(shape)}.")
        return (self.gain * np.eye(*shape)).astype(dtype)

    def get_config(self):
        return {} if self.gain == 1.0 else {"gain": self.gain}
