"""ScalarVariable: the optimizer's learning rate and iteration count as Keras-like variables.

Keras 2 scripts write `K.set_value(model.optimizer.lr, 0.5)` and
`float(K.get_value(model.optimizer.lr))`; Keras 3 code writes
`optimizer.learning_rate.assign(0.5)`, `optimizer.iterations.numpy()` or plain arithmetic on
them. A plain float attribute supports none of the writes, so the optimizer hands out this
small object: it reads and writes the optimizer's own value through two functions, converts
with float() / int() / np.asarray(), and does arithmetic and comparisons as a number.
"""

import operator

import numpy as np


def _number(value):
    return value.numpy()[()] if isinstance(value, ScalarVariable) else value


def _binary(op, reflected=False):
    def method(self, other):
        other = _number(other)
        if not isinstance(other, (int, float, np.number, np.ndarray)):
            return NotImplemented
        mine = self.numpy()[()]
        return op(other, mine) if reflected else op(mine, other)
    return method


class ScalarVariable:
    """Args: path ("<optimizer>/<name>"), read (() -> value), write (value -> None, may raise
    TypeError), dtype ("float32" or "int64")."""

    def __init__(self, path, read, write, dtype):
        self.path = path
        self.name = path.rsplit("/", 1)[-1]
        self._read, self._write = read, write
        self.dtype = dtype
        self.shape = ()
        self.trainable = False

    def numpy(self):
        return np.array(self._read(), dtype=self.dtype)

    @property
    def value(self):
        return self.numpy()

    def assign(self, value):
        value = _number(value)
        self._write(value)
        return self

    def assign_add(self, value):
        return self.assign(self.numpy()[()] + _number(value))

    def assign_sub(self, value):
        return self.assign(self.numpy()[()] - _number(value))

    def __array__(self, dtype=None, copy=None):
        del copy  # always a fresh array
        return self.numpy() if dtype is None else self.numpy().astype(dtype)

    def __float__(self):
        return float(self.numpy())

    def __int__(self):
        return int(self.numpy())

    def __index__(self):
        if self.dtype.startswith("int"):
            return int(self.numpy())
        raise TypeError(f"{self.path} is a {self.dtype} variable, not an integer")

    def __bool__(self):
        return bool(self.numpy())

    def __format__(self, spec):
        return format(self.numpy()[()], spec)

    def __repr__(self):
        return (f"<Variable path={self.path}, shape=(), dtype={self.dtype}, "
                f"value={self.numpy()[()]}>")

    __hash__ = object.__hash__  # identity, as Keras variables
    __add__, __radd__ = _binary(operator.add), _binary(operator.add, True)
    __sub__, __rsub__ = _binary(operator.sub), _binary(operator.sub, True)
    __mul__, __rmul__ = _binary(operator.mul), _binary(operator.mul, True)
    __truediv__, __rtruediv__ = _binary(operator.truediv), _binary(operator.truediv, True)
    __floordiv__, __rfloordiv__ = _binary(operator.floordiv), _binary(operator.floordiv, True)
    __mod__, __rmod__ = _binary(operator.mod), _binary(operator.mod, True)
    __pow__, __rpow__ = _binary(operator.pow), _binary(operator.pow, True)
    __eq__, __ne__ = _binary(operator.eq), _binary(operator.ne)
    __lt__, __le__ = _binary(operator.lt), _binary(operator.le)
    __gt__, __ge__ = _binary(operator.gt), _binary(operator.ge)

    def __neg__(self):
        return -self.numpy()[()]

    def __abs__(self):
        return abs(self.numpy()[()])
