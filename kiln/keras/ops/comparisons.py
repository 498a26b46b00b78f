"""keras.ops comparisons: equal, not_equal, greater, greater_equal, less, less_equal.

Eagerly numpy's (bool arrays, as Keras). Inside a model the engine's BroadcastBinary with
oneDNN binary's comparison algorithms (numba where oneDNN has only its reference kernel): the
result is float32 1.0 / 0.0, the way a Keras bool tensor is used in arithmetic
(`x * ops.cast(x > 0, "float32")`), and it has a zero gradient to both operands. A Python
number operand (`x > 0`) is a constant of the op; a number or weight first is the mirror
comparison (`0 < x` is `x > 0`).
"""

import numpy as np

from ...graph.symbolic import SymbolicTensor, apply
from ...ops.broadcast import BroadcastBinary
from .binary import binary
from .core import eager_operand, is_symbolic, op_name, result

NUMPY = {"equal": np.equal, "not_equal": np.not_equal, "greater": np.greater,
         "greater_equal": np.greater_equal, "less": np.less, "less_equal": np.less_equal}
MIRROR = {"equal": "equal", "not_equal": "not_equal", "greater": "less", "less": "greater",
          "greater_equal": "less_equal", "less_equal": "greater_equal"}


def _is_number(value):
    if isinstance(value, np.ndarray) and value.ndim == 0:
        value = value[()]
    return isinstance(value, (int, float, np.number)) and not isinstance(value, (bool,
                                                                                 np.bool_))


def _comparison(function):
    def run(x1, x2):
        if is_symbolic(x1, x2):
            if not isinstance(x1, SymbolicTensor):  # the tensor first: the mirror comparison
                return run_mirrored(x2, x1)
            if _is_number(x2):
                return apply(BroadcastBinary(op_name(function), function,
                                             constant=float(np.asarray(x2))), x1)
            return binary(function, x1, x2)
        return result(NUMPY[function](eager_operand(x1), eager_operand(x2)))

    def run_mirrored(x1, x2):
        return COMPARISONS[MIRROR[function]](x1, x2)

    run.__name__ = function
    return run


COMPARISONS = {name: _comparison(name) for name in NUMPY}
equal = COMPARISONS["equal"]
not_equal = COMPARISONS["not_equal"]
greater = COMPARISONS["greater"]
greater_equal = COMPARISONS["greater_equal"]
less = COMPARISONS["less"]
less_equal = COMPARISONS["less_equal"]
