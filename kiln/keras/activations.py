"""Keras activation names and numpy reference functions (`keras.activations`).

Layers pass the *name* to the engine (kiln.ops.eltwise's table), which fuses what oneDNN can
compute into conv and dense primitives; the functions here let users pass
`activation=activations.relu` as in Keras, and compute the same values on numpy arrays.

Called on a symbolic tensor (in a Lambda, a custom layer's call() or an Activation given a
function), each becomes the engine's activation op with its arguments, e.g.
`relu(x, max_value=6)` -> "relu(max_value=6.0)", as Keras 3 traces them into the model.
"""

import functools
import math

import numpy as np

from ..graph.symbolic import SymbolicTensor, apply
from ..ops.eltwise import ALIASES, activation_name


def _traced(name, arguments=()):
    """`function(x, ...)` on numpy values, and the engine's op named `name` (with the Keras
    `arguments` of the function) on a symbolic tensor."""

    def decorate(function):
        @functools.wraps(function)
        def run(x, *args, **kwargs):
            if not isinstance(x, SymbolicTensor):
                return function(x, *args, **kwargs)
            from ..ops.activation import ActivationOp
            from .ops.core import op_name  # keras.ops imports the layers, which import us

            values = dict(zip(arguments, args, strict=False))
            values.update(kwargs)
            _check_arguments(name, values)
            return apply(ActivationOp(op_name(name), activation_name(name, **values)), x)
        return run
    return decorate


def _check_arguments(name, values):
    from .layers.relu import non_negative
    from .ops.core import where

    context = f"{where()}: keras.activations.{name}"
    if name == "relu":  # Keras 3 builds a ReLU layer, which checks these
        values["max_value"] = non_negative(values.get("max_value"), context, "max_value",
                                           allow_none=True)
        for key in ("negative_slope", "threshold"):
            values[key] = non_negative(values.get(key, 0.0), context, key)
    elif name == "gelu":
        values["approximate"] = bool(values.get("approximate", False))


def linear(x):
    return x


@_traced("relu", ("negative_slope", "max_value", "threshold"))
def relu(x, negative_slope=0.0, max_value=None, threshold=0.0):
    x = np.asarray(x)
    y = np.where(x > threshold, x, 0.0)
    if max_value is not None:
        y = np.clip(y, 0.0, max_value)
    return (y - negative_slope * np.maximum(threshold - x, 0.0)).astype(x.dtype)


@_traced("relu6")
def relu6(x):
    return np.clip(x, 0, 6)


@_traced("leaky_relu", ("negative_slope",))
def leaky_relu(x, negative_slope=0.2):
    return np.where(x > 0, x, negative_slope * x)


@_traced("elu", ("alpha",))
def elu(x, alpha=1.0):
    return np.where(x > 0, x, alpha * np.expm1(np.minimum(x, 0)))


@_traced("selu")
def selu(x):
    return 1.0507009873554805 * elu(x, 1.6732632423543772)


@_traced("gelu", ("approximate",))
def gelu(x, approximate=False):
    x = np.asarray(x)
    if approximate:
        return 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3)))
    return (0.5 * x * (1 + np.vectorize(math.erf)(x / np.sqrt(2)))).astype(x.dtype)


@_traced("tanh")
def tanh(x):
    return np.tanh(x)


@_traced("sigmoid")
def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


@_traced("silu")
def silu(x):
    return x * sigmoid(x)


@_traced("hard_sigmoid")
def hard_sigmoid(x):
    return np.clip(np.asarray(x) + 3, 0, 6) / 6


@_traced("hard_silu")
def hard_silu(x):
    return x * hard_sigmoid(x)


@_traced("softplus")
def softplus(x):
    return np.logaddexp(0, x)


@_traced("softsign")
def softsign(x):
    return x / (1 + np.abs(x))


@_traced("exponential")
def exponential(x):
    return np.exp(x)


@_traced("mish")
def mish(x):
    return x * np.tanh(softplus(x))


def _softmax_op(kind, x, axis):
    from ..ops.softmax import SoftmaxOp
    from .ops.core import op_name

    return apply(SoftmaxOp(op_name(kind), axis, kind), x)


def softmax(x, axis=-1):
    if isinstance(x, SymbolicTensor):
        return _softmax_op("softmax", x, axis)
    e = np.exp(x - np.max(x, axis=axis, keepdims=True))
    return e / np.sum(e, axis=axis, keepdims=True)


def log_softmax(x, axis=-1):
    if isinstance(x, SymbolicTensor):
        return _softmax_op("log_softmax", x, axis)
    shifted = x - np.max(x, axis=axis, keepdims=True)
    return shifted - np.log(np.sum(np.exp(shifted), axis=axis, keepdims=True))


swish = silu
hard_swish = hard_silu

ALL = {f.__name__: f for f in (linear, relu, relu6, leaky_relu, elu, selu, gelu, tanh, sigmoid,
                               silu, hard_sigmoid, hard_silu, softplus, softsign, exponential,
                               mish, softmax, log_softmax)}


def resolve(identifier, context):
    """A layer's `activation` argument as (Keras name, None), or ("linear", function) for any
    other callable, which the layer applies to its op's output, traced on the symbolic tensor
    like Activation's (so it must compute with keras.ops / keras.activations). A saved
    function config (a dict, as get_config writes a registered function) is the function it
    names: registered, or in the custom objects of the load."""
    if isinstance(identifier, dict) and identifier.get("class_name") == "function":
        from .saving.serialization import deserialize_function

        identifier = deserialize_function(identifier)
    elif isinstance(identifier, dict) and identifier.get("class_name") == "__lambda__":
        raise ValueError(f"{context}: argument activation is a saved lambda; loading runs no "
                         "code from a file: define a function, register it with "
                         "keras.saving.register_keras_serializable() and use it instead")
    if callable(identifier) and not isinstance(identifier, str) and ALL.get(
            getattr(identifier, "__name__", None)) is not identifier:
        return "linear", identifier  # not one of Keras's, even if named like one
    return get_name(identifier, context), None


def config_of(name, function):
    """What get_config writes for an activation resolve() returned, as Keras 3's
    activations.serialize: the name of a Keras activation; a function config naming a
    user's function by its registered name (else its own); a lambda's code."""
    if function is None:
        return name
    from .saving.serialization import get_registered_name

    if getattr(function, "__name__", None) == "<lambda>":
        from .layers.lambda_layer import Lambda

        return Lambda._serialize_function(function)["config"]
    return {"module": "builtins", "class_name": "function",
            "config": get_registered_name(function), "registered_name": "function"}


def get_name(identifier, context):
    """The canonical Keras name of an activation given as None, a name (Keras's aliases
    'swish' and 'hard_swish' included) or one of these functions."""
    if identifier is None:
        return "linear"
    name = None
    if callable(identifier):
        name = getattr(identifier, "__name__", None)
    elif isinstance(identifier, str):
        name = identifier.lower()
    name = ALIASES.get(name, name)
    if name in ALL:  # a function is known by its name, as Keras serializes it
        return name
    raise ValueError(f"{context}: argument activation must be one of "
                     f"{sorted(ALL) + sorted(ALIASES)}, got {identifier!r}")
