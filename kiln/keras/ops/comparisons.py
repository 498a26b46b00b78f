"""keras.ops comparisons (equal, not_equal, greater, greater_equal, less, less_equal) and
where, which selects by a condition.

Eagerly numpy's (bool arrays, as Keras). Inside a model the engine's BroadcastBinaryOp with
oneDNN binary's comparison algorithms (numba where oneDNN has only its reference kernel): the
result is float32 1.0 / 0.0, the way a Keras bool tensor is used in arithmetic
(`x * ops.cast(x > 0, "float32")`), and it has a zero gradient to both operands. A Python
number operand (`x > 0`) is a constant of the op; a number or weight first is the mirror
comparison (`0 < x` is `x > 0`).

where(condition, x1, x2) in a model is the engine's SelectOp (numpy broadcasting; the condition
true where non-zero; x1 and x2 may be Python numbers: where(x > 0, x, 0.0)).
"""

import numpy as np

from ...graph.symbolic import SymbolicTensor, apply
from ...ops.broadcast import BroadcastBinaryOp
from ...ops.select import SelectOp
from .binary import binary, broadcast_shape
from .core import (
    eager_operand,
    is_symbolic,
    keras_array,
    keras_axes_to_logical,
    not_in_model,
    op_name,
    result,
)

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
                return apply(BroadcastBinaryOp(op_name(function), function,
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


def where(condition, x1=None, x2=None):
    if x1 is None and x2 is None:
        if is_symbolic(condition):
            not_in_model("where", "the one-argument form (the indices of the non-zero "
                                  "entries have a data-dependent shape)")
        return tuple(result(i) for i in np.nonzero(keras_array(condition)))
    if not is_symbolic(condition, x1, x2):
        return result(np.where(keras_array(condition), eager_operand(x1), eager_operand(x2)))
    operands = (condition, x1, x2)
    tensors = [v for v in operands if isinstance(v, SymbolicTensor)]
    constants = {}
    for index, value in enumerate(operands):
        if _is_number(value):
            constants[index] = float(np.asarray(value))
        elif not isinstance(value, SymbolicTensor):
            not_in_model("where", f"a {type(value).__name__} operand (argument "
                                  f"{('condition', 'x1', 'x2')[index]}); inside a model its "
                                  "operands are tensors or Python numbers")
    shape = tensors[0].shape[1:]
    for tensor in tensors[1:]:
        shape = broadcast_shape("where", shape, tensor.shape[1:])
    if len({len(t.shape) for t in tensors}) > 1:
        not_in_model("where", "broadcasting " + " with ".join(str(t.shape) for t in tensors))
    for tensor in tensors:
        keras_axes_to_logical(tensor)  # refuses flattened tensors
    return apply(SelectOp(op_name("where"), constants), tensors)
