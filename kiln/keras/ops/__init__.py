"""keras.ops: Keras 3's operations, eager on numpy arrays and traced into the model inside a
layer's `call()` (see core.py for the dispatch, each module for what runs in a model).

    from kiln import keras
    keras.ops.add(np.ones(3), 1.0)            # array([2., 2., 2.], dtype=float32)

    class Scale(keras.layers.Layer):
        def build(self, input_shape):
            self.scale = self.add_weight(shape=(input_shape[-1],), initializer="ones")
        def call(self, x):
            return keras.ops.multiply(x, self.scale)   # planned, with its backward
"""

from ...graph import symbolic
from . import nn
from .attention import dot_product_attention
from .comparisons import equal, greater, greater_equal, less, less_equal, not_equal, where
from .convolution import conv
from .creation import arange, linspace, tril, triu
from .elementwise import (
    abs,
    absolute,
    add,
    ceil,
    clip,
    cos,
    divide,
    elu,
    erf,
    exp,
    expm1,
    floor,
    floor_divide,
    gelu,
    hard_sigmoid,
    hard_silu,
    hard_swish,
    leaky_relu,
    log,
    log1p,
    logical_and,
    logical_not,
    logical_or,
    maximum,
    minimum,
    mod,
    multiply,
    negative,
    power,
    relu,
    relu6,
    round,
    rsqrt,
    selu,
    sigmoid,
    sign,
    silu,
    sin,
    softplus,
    softsign,
    sqrt,
    square,
    subtract,
    swish,
    tanh,
    true_divide,
)
from .gathering import repeat, take, tile
from .linear_algebra import dot, einsum, matmul, tensordot
from .nn import log_softmax, softmax
from .normalization import layer_normalization, rms_normalization
from .pooling import average_pool, max_pool
from .reductions import (
    amax,
    amin,
    argmax,
    argmin,
    cumsum,
    logsumexp,
    max,
    mean,
    min,
    prod,
    std,
    sum,
    var,
)
from .shapes import (
    cast,
    concatenate,
    convert_to_tensor,
    expand_dims,
    one_hot,
    ones,
    ones_like,
    reshape,
    shape,
    squeeze,
    transpose,
    zeros,
    zeros_like,
)
from .slicing import getitem, slice, split, stack

# Python operators on symbolic tensors (x * 2, x + self.bias, x[...]) are these functions
symbolic.OPERATORS.update({"add": add, "subtract": subtract, "multiply": multiply,
                           "divide": divide, "power": power, "matmul": matmul,
                           "negative": negative, "abs": abs, "getitem": getitem,
                           "greater": greater, "greater_equal": greater_equal, "less": less,
                           "less_equal": less_equal})

__all__ = ["abs", "absolute", "add", "amax", "amin", "arange", "argmax", "argmin", "average_pool",
           "cast", "ceil", "clip", "concatenate", "conv", "convert_to_tensor", "cos", "cumsum",
           "divide", "dot", "einsum", "elu", "equal", "erf", "exp", "expand_dims", "expm1",
           "floor", "floor_divide", "gelu", "getitem", "greater", "greater_equal", "hard_sigmoid",
           "hard_silu", "hard_swish", "leaky_relu", "less", "less_equal", "linspace", "log",
           "log1p", "log_softmax", "logical_and", "logical_not", "logical_or", "logsumexp",
           "matmul", "max", "max_pool", "maximum", "mean", "min", "minimum", "mod", "multiply",
           "negative", "nn", "not_equal", "one_hot", "ones", "ones_like", "power", "prod", "relu",
           "relu6", "repeat", "reshape", "round", "rsqrt", "selu", "shape", "sigmoid", "sign",
           "silu", "sin", "slice", "softmax", "softplus", "softsign", "split", "sqrt", "square",
           "squeeze", "stack", "std", "subtract", "sum", "swish", "take", "tanh", "tensordot",
           "tile", "transpose", "tril", "triu", "true_divide", "var", "where", "zeros",
           "zeros_like"]
__all__ += ["dot_product_attention", "layer_normalization", "rms_normalization"]
