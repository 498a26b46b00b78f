"""keras.ops.matmul / dot / einsum / tensordot: eager with numpy. Inside a model they have
no engine op yet (a Dense layer is the planned form of `x @ kernel`)."""

import numpy as np

from .core import eager_operand, is_symbolic, keras_array, not_in_model, result


def matmul(x1, x2):
    if is_symbolic(x1, x2):
        not_in_model("matmul", "use a Dense layer for x @ kernel")
    return result(np.matmul(keras_array(x1), keras_array(x2)))


def dot(x1, x2):
    if is_symbolic(x1, x2):
        not_in_model("dot", "use a Dense layer for x @ kernel")
    return result(np.dot(eager_operand(x1), eager_operand(x2)))


def tensordot(x1, x2, axes=2):
    if is_symbolic(x1, x2):
        not_in_model("tensordot")
    return result(np.tensordot(keras_array(x1), keras_array(x2), axes))


def einsum(subscripts, *operands):
    if is_symbolic(*operands):
        not_in_model("einsum")
    return result(np.einsum(subscripts, *[keras_array(o) for o in operands]))
