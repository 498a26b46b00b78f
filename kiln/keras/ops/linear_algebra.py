"""keras.ops.matmul / dot / einsum / tensordot: eager with numpy.

Inside a model, `matmul(x, self.w)` (or `dot`, or `x @ self.w`) of a (batch, features)
tensor and a (features, units) weight from add_weight is the engine's Dense op (oneDNN inner
product, the weight its kernel, so it trains); other products have no engine op yet.
"""

import numpy as np

from ...graph.symbolic import SymbolicTensor, apply
from ...ops.dense import Dense
from ..layers.custom_weights import bind_dims
from ..layers.weight import Weight
from .core import eager_operand, is_symbolic, keras_array, not_in_model, result, where


def _times_weight(function, x, weight):
    """x (batch, features) times weight (features, units) as an inner product."""
    if len(x.shape) != 2 or len(weight.shape) != 2:
        not_in_model(function, f"of shapes {x.shape} and {weight.shape}; a (batch, features) "
                               "tensor times a (features, units) weight is planned")
    if x.shape[1] != weight.shape[0]:
        raise ValueError(f"{where()}: keras.ops.{function}: shapes {x.shape} and "
                         f"{weight.shape} do not fit ({x.shape[1]} != {weight.shape[0]})")
    owner, short = weight.path.rsplit("/", 1)
    op = Dense(owner, weight.shape[1], None, use_bias=False, kernel_name=short)
    dims, tag = op.parameter_dims(x.dims)[short]
    bind_dims(weight, dims, tag, where())
    return apply(op, x)


def matmul(x1, x2):
    if is_symbolic(x1, x2):
        if isinstance(x1, SymbolicTensor) and isinstance(x2, Weight):
            return _times_weight("matmul", x1, x2)
        not_in_model("matmul", "only a tensor times a weight from add_weight is planned")
    return result(np.matmul(keras_array(x1), keras_array(x2)))


def dot(x1, x2):
    if is_symbolic(x1, x2):
        if isinstance(x1, SymbolicTensor) and isinstance(x2, Weight):
            return _times_weight("dot", x1, x2)
        not_in_model("dot", "only a tensor times a weight from add_weight is planned")
    return result(np.dot(eager_operand(x1), eager_operand(x2)))


def tensordot(x1, x2, axes=2):
    if is_symbolic(x1, x2):
        not_in_model("tensordot")
    return result(np.tensordot(keras_array(x1), keras_array(x2), axes))


def einsum(subscripts, *operands):
    if is_symbolic(*operands):
        not_in_model("einsum")
    return result(np.einsum(subscripts, *[keras_array(o) for o in operands]))
