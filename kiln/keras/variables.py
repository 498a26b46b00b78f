"""`keras.Variable`: Keras 3's standalone variable, held as a numpy array (kiln has no
eager tensors).

    v = keras.Variable(initializer="ones", shape=(2, 3), name="v")
    v.assign(v.numpy() * 2)

A layer's weights are made with `Layer.add_weight` / `add_variable` (they live in the model's
packed weight arena and train); a `keras.Variable` is state kept beside a model (a counter, a
value a callback adjusts). Arithmetic on it gives numpy arrays, as keras.ops does on arrays.
"""

import numpy as np

from . import initializers

_AGGREGATIONS = (None, "none", "mean", "sum", "only_first_replica")
_SYNCHRONIZATIONS = (None, "none", "on_read", "on_write", "auto")
_names = {}  # Keras names unnamed variables 'variable', 'variable_1', ...


def _auto_name():
    count = _names.get("variable", 0)
    _names["variable"] = count + 1
    return "variable" if count == 0 else f"variable_{count}"


def _keras_dtype(array):
    """Keras's dtype for a value given without a dtype (JAX's: 64-bit types become 32-bit)."""
    if array.dtype == np.float64:
        return "float32"
    if array.dtype == np.int64:
        return "int32"
    return array.dtype.name


class Variable:
    """Args (Keras 3's): initializer (an initializer, its name, or the initial value),
    shape (required with an initializer), dtype (default float32, or the value's dtype),
    trainable, autocast, aggregation, synchronization, name."""

    def __init__(self, initializer, shape=None, dtype=None, trainable=True, autocast=True,
                 aggregation="none", synchronization="auto", name=None, **kwargs):
        if kwargs.keys() - {"layout"}:
            raise TypeError(f"keras.Variable: unexpected keyword argument(s) "
                            f"{sorted(kwargs.keys() - {'layout'})}")
        name = _auto_name() if name is None else name
        if not isinstance(name, str) or "/" in name:
            raise ValueError(f"keras.Variable: argument name must be a string without '/', "
                             f"got {name!r}")
        if aggregation not in _AGGREGATIONS:
            raise ValueError(f"keras.Variable '{name}': argument aggregation must be one of "
                             f"{_AGGREGATIONS}, got {aggregation!r}")
        if synchronization not in _SYNCHRONIZATIONS:
            raise ValueError(f"keras.Variable '{name}': argument synchronization must be one "
                             f"of {_SYNCHRONIZATIONS}, got {synchronization!r}")
        self.name = self.path = name
        self.trainable, self.autocast = bool(trainable), bool(autocast)
        self.aggregation = aggregation or "none"
        self.synchronization = synchronization or "none"
        dtype = getattr(dtype, "name", dtype)
        if isinstance(initializer, str) or callable(initializer):
            if shape is None:
                raise ValueError(f"keras.Variable '{name}': argument shape is required with "
                                 f"an initializer, got initializer={initializer!r} and "
                                 "shape=None")
            shape = self._checked_shape(shape)
            init = initializers.get(initializer, f"keras.Variable '{name}'", "initializer")
            value = np.asarray(init(shape, dtype=dtype or "float32"))
            dtype = dtype or "float32"
        else:
            value = np.asarray(initializer.numpy() if hasattr(initializer, "numpy")
                               else initializer)
            dtype = dtype or _keras_dtype(value)
            if shape is not None and self._checked_shape(shape) != value.shape:
                raise ValueError(f"keras.Variable '{name}': argument shape {tuple(shape)} "
                                 f"differs from the initial value's shape {value.shape}")
        try:
            self.dtype = np.dtype(dtype).name
        except TypeError:
            raise ValueError(f"keras.Variable '{name}': argument dtype must be a numpy / Keras "
                             f"dtype name, got {dtype!r}") from None
        self._value = np.array(value, dtype=self.dtype)

    def _checked_shape(self, shape):
        try:
            shape = tuple(int(d) for d in shape)
        except (TypeError, ValueError):
            raise ValueError(f"keras.Variable '{self.name}': argument shape must be a tuple "
                             f"of ints, got {shape!r}") from None
        if any(d < 0 for d in shape):
            raise ValueError(f"keras.Variable '{self.name}': argument shape must have sizes "
                             f">= 0, got {shape!r}")
        return shape

    @property
    def shape(self):
        return self._value.shape

    @property
    def ndim(self):
        return self._value.ndim

    @property
    def value(self):
        return self._value.copy()

    def numpy(self):
        return self._value.copy()

    def assign(self, value):
        value = np.asarray(value.numpy() if hasattr(value, "numpy") else value)
        if value.shape != self.shape:
            raise ValueError(f"keras.Variable '{self.name}': assign() expected a value of "
                             f"shape {self.shape}, got {value.shape}")
        self._value = value.astype(self.dtype)
        return self

    def assign_add(self, value):
        return self.assign(self._value + np.asarray(value))

    def assign_sub(self, value):
        return self.assign(self._value - np.asarray(value))

    def __array__(self, dtype=None, copy=None):
        return self.numpy() if dtype is None else self._value.astype(dtype)

    def __repr__(self):
        return (f"<Variable path={self.path}, shape={self.shape}, dtype={self.dtype}, "
                f"value={self._value}>")

    def __len__(self):
        return len(self._value)

    def __getitem__(self, key):
        return self._value[key]


def _binary(name):
    def forward(self, other):
        return getattr(self._value, name)(np.asarray(other))

    forward.__name__ = name
    return forward


for _name in ("__add__", "__radd__", "__sub__", "__rsub__", "__mul__", "__rmul__",
              "__truediv__", "__rtruediv__", "__pow__", "__rpow__", "__matmul__", "__rmatmul__",
              "__lt__", "__le__", "__gt__", "__ge__"):
    setattr(Variable, _name, _binary(_name))
Variable.__neg__ = lambda self: -self._value
