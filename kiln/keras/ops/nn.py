"""keras.ops.nn: the activations (also at keras.ops' top level), softmax / log_softmax,
which run inside a model as the engine's SoftmaxOp over the Keras axis, and
dot_product_attention, layer_normalization, rms_normalization (attention.py,
normalization.py)."""

import numpy as np

from ...graph.symbolic import SymbolicTensor, apply
from ...ops.softmax import SoftmaxOp
from .attention import dot_product_attention  # noqa: F401 (keras.ops.nn.*)
from .convolution import conv  # noqa: F401 (keras.ops.nn.conv)
from .core import keras_array, op_name, result
from .elementwise import (  # noqa: F401 (keras.ops.nn.*)
    elu,
    gelu,
    hard_sigmoid,
    hard_silu,
    hard_swish,
    leaky_relu,
    relu,
    relu6,
    selu,
    sigmoid,
    silu,
    softplus,
    softsign,
    swish,
)
from .normalization import layer_normalization, rms_normalization  # noqa: F401
from .pooling import average_pool, max_pool  # noqa: F401 (keras.ops.nn.*)
from .reductions import logsumexp
from .shapes import one_hot  # noqa: F401 (keras.ops.nn.one_hot)


def softmax(x, axis=-1):
    if isinstance(x, SymbolicTensor):
        return apply(SoftmaxOp(op_name("softmax"), axis, "softmax"), x)
    array = keras_array(x)
    shifted = np.exp(array - np.max(array, axis=axis, keepdims=True))
    return result(shifted / np.sum(shifted, axis=axis, keepdims=True), True)


def log_softmax(x, axis=-1):
    if isinstance(x, SymbolicTensor):
        return apply(SoftmaxOp(op_name("log_softmax"), axis, "log_softmax"), x)
    array = keras_array(x)
    return result(array - logsumexp(array, axis=axis, keepdims=True), True)
