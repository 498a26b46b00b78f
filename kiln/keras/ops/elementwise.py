"""keras.ops element-wise functions: one input, or two with numpy broadcasting.

Inside a model:
    activations (relu, sigmoid, tanh, exp, gelu, ...)    the engine's ActivationOp
    abs, sqrt, log, square, negative, clip, x ** c       the engine's UnaryOp (oneDNN eltwise)
    sin, cos, erf, round                                 ElementwiseMathOp (numba kernels)
    a tensor and a Python number (x * 2, 1 - x, x / 4)   UnaryOp (eltwise linear / pow / clip)
    two tensors or a tensor and a weight                 binary.py
"""

import math

import numpy as np

from ...graph.symbolic import SymbolicTensor, apply
from ...ops.activation import ActivationOp
from ...ops.elementwise_math import ElementwiseMathOp
from ...ops.eltwise import activation_name
from ...ops.unary import UnaryOp
from .binary import binary
from .core import eager_operand, is_symbolic, keras_array, not_in_model, op_name, result

FLOAT_MAX = float(np.finfo(np.float32).max)


def _sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def _erf(x):
    return np.vectorize(math.erf, otypes=[x.dtype])(x)


def _gelu(x, approximate):
    if approximate:
        return 0.5 * x * (1.0 + np.tanh(np.sqrt(2.0 / np.pi) * (x + 0.044715 * x ** 3)))
    return 0.5 * x * (1.0 + _erf(x / np.sqrt(2.0)))


SELU_ALPHA, SELU_SCALE = 1.6732632423543772, 1.0507009873554805


def _activation(name, eager, **arguments):
    """A keras.ops activation: numpy formula eagerly, the engine's ActivationOp in a model."""

    def function(x, **given):
        values = {**arguments, **given}
        if isinstance(x, SymbolicTensor):
            return apply(ActivationOp(op_name(name), activation_name(name, **values)), x)
        array = keras_array(x)
        if array.dtype.kind != "f":
            array = array.astype(np.float32)
        return result(eager(array, **values))

    function.__name__ = name
    return function


relu = _activation("relu", lambda x: np.maximum(x, 0))
relu6 = _activation("relu6", lambda x: np.clip(x, 0, 6))
sigmoid = _activation("sigmoid", _sigmoid)
tanh = _activation("tanh", np.tanh)
softplus = _activation("softplus", lambda x: np.logaddexp(0, x))
softsign = _activation("softsign", lambda x: x / (1 + np.abs(x)))
silu = _activation("silu", lambda x: x * _sigmoid(x))
swish = silu
hard_sigmoid = _activation("hard_sigmoid", lambda x: np.clip(x / 6 + 0.5, 0, 1))
hard_silu = _activation("hard_silu", lambda x: x * np.clip(x / 6 + 0.5, 0, 1))
hard_swish = hard_silu
selu = _activation("selu", lambda x: SELU_SCALE * np.where(
    x > 0, x, SELU_ALPHA * (np.exp(np.minimum(x, 0)) - 1)))
_elu = _activation("elu", lambda x, alpha: np.where(x > 0, x, alpha * (np.exp(np.minimum(x, 0))
                                                                       - 1)), alpha=1.0)
_leaky_relu = _activation("leaky_relu", lambda x, negative_slope: np.where(
    x >= 0, x, negative_slope * x), negative_slope=0.2)
_gelu_op = _activation("gelu", _gelu, approximate=True)
_exponential = _activation("exponential", np.exp)


def elu(x, alpha=1.0):
    return _elu(x, alpha=alpha)


def leaky_relu(x, negative_slope=0.2):
    return _leaky_relu(x, negative_slope=negative_slope)


def gelu(x, approximate=True):
    return _gelu_op(x, approximate=bool(approximate))


def exp(x):
    return _exponential(x)


def _unary(name, eager, function, alpha=0.0, beta=0.0, float_result=True):
    """A keras.ops math function: numpy eagerly, the engine's UnaryOp in a model."""

    def run(x):
        if isinstance(x, SymbolicTensor):
            return apply(UnaryOp(op_name(name), function, alpha, beta), x)
        return result(eager(keras_array(x)), float_result)

    run.__name__ = name
    return run


abs = _unary("abs", np.abs, "abs", float_result=False)  # noqa: A001 (keras.ops.abs)
absolute = abs
sqrt = _unary("sqrt", np.sqrt, "sqrt")
log = _unary("log", np.log, "log")
square = _unary("square", np.square, "square", float_result=False)
negative = _unary("negative", np.negative, "linear", -1.0, 0.0, float_result=False)


def clip(x, x_min, x_max):
    if isinstance(x, SymbolicTensor):
        if is_symbolic(x_min, x_max) or np.ndim(x_min) or np.ndim(x_max):
            not_in_model("clip", "bounds must be Python numbers inside a model")
        return apply(UnaryOp(op_name("clip"), "clip", float(x_min), float(x_max)), x)
    return result(np.clip(keras_array(x), x_min, x_max))


def _is_number(value):
    """A Python or numpy number, or a 0-d array (not a bool): a constant of the eltwise op."""
    if isinstance(value, np.ndarray) and value.ndim == 0:
        value = value[()]
    return isinstance(value, (int, float, np.number)) and not isinstance(value, (bool,
                                                                                 np.bool_))


def _scalar(function, x, number, number_first):
    """`x function number` (or `number function x`) on a tensor, as one eltwise op."""
    c = float(np.asarray(number))
    if function == "add":
        alpha, beta, kind = 1.0, c, "linear"
    elif function == "subtract":
        alpha, beta, kind = (-1.0, c, "linear") if number_first else (1.0, -c, "linear")
    elif function == "multiply":
        alpha, beta, kind = c, 0.0, "linear"
    elif function == "divide":
        if number_first:
            alpha, beta, kind = c, -1.0, "pow"  # c * x ** -1
        else:
            with np.errstate(divide="ignore"):  # x / 0 is inf or nan, as numpy and Keras
                alpha, beta, kind = float(np.float32(1) / np.float32(c)), 0.0, "linear"
    elif function == "maximum":
        alpha, beta, kind = c, FLOAT_MAX, "clip"
    elif function == "minimum":
        alpha, beta, kind = -FLOAT_MAX, c, "clip"
    elif function == "power" and not number_first:
        alpha, beta, kind = 1.0, c, "pow"
    else:
        not_in_model(function, "a number raised to a tensor's power")
    return apply(UnaryOp(op_name(function), kind, alpha, beta), x)


NUMPY_BINARY = {"add": np.add, "subtract": np.subtract, "multiply": np.multiply,
                "divide": np.true_divide, "maximum": np.maximum, "minimum": np.minimum,
                "power": np.power}


def _binary(function):
    def run(x1, x2):
        if is_symbolic(x1, x2):
            if isinstance(x1, SymbolicTensor) and _is_number(x2):
                return _scalar(function, x1, x2, number_first=False)
            if isinstance(x2, SymbolicTensor) and _is_number(x1):
                return _scalar(function, x2, x1, number_first=True)
            return binary(function, x1, x2)
        a, b = eager_operand(x1), eager_operand(x2)
        return result(NUMPY_BINARY[function](a, b), float_result=function == "divide")

    run.__name__ = function
    return run


add = _binary("add")
subtract = _binary("subtract")
multiply = _binary("multiply")
divide = _binary("divide")
true_divide = divide
maximum = _binary("maximum")
minimum = _binary("minimum")
power = _binary("power")


def _eager_only(name, numpy_function, float_result=False):
    def run(*arguments, **keywords):
        if is_symbolic(*arguments, *keywords.values()):
            not_in_model(name)
        return result(numpy_function(*[eager_operand(a) for a in arguments], **keywords),
                      float_result)

    run.__name__ = name
    return run


logical_and = _eager_only("logical_and", np.logical_and)
logical_or = _eager_only("logical_or", np.logical_or)
logical_not = _eager_only("logical_not", np.logical_not)
sign = _eager_only("sign", np.sign)
floor = _eager_only("floor", np.floor, True)
ceil = _eager_only("ceil", np.ceil, True)
log1p = _eager_only("log1p", np.log1p, True)
expm1 = _eager_only("expm1", np.expm1, True)
mod = _eager_only("mod", np.mod)
floor_divide = _eager_only("floor_divide", np.floor_divide)


def _kernel_math(name, eager):
    """A keras.ops math function: numpy eagerly, the engine's ElementwiseMathOp in a model."""

    def run(x):
        if isinstance(x, SymbolicTensor):
            return apply(ElementwiseMathOp(op_name(name), name), x)
        array = keras_array(x)
        return result(eager(array.astype(np.float32) if array.dtype.kind != "f" else array))

    run.__name__ = name
    return run


sin = _kernel_math("sin", np.sin)
cos = _kernel_math("cos", np.cos)
erf = _kernel_math("erf", _erf)
_round_half_to_even = _kernel_math("round", np.round)


def round(x, decimals=0):  # noqa: A001 (keras.ops.round)
    """Half to even, as numpy; in a model with decimals=0 (its gradient is zero)."""
    if isinstance(x, SymbolicTensor):
        if decimals != 0:
            not_in_model("round", f"decimals={decimals!r} (0 only inside a model)")
        return _round_half_to_even(x)
    return result(np.round(keras_array(x), decimals))


def rsqrt(x):
    if isinstance(x, SymbolicTensor):
        return apply(UnaryOp(op_name("rsqrt"), "pow", 1.0, -0.5), x)
    return result(1.0 / np.sqrt(keras_array(x)), True)
