"""keras.ops.layer_normalization and keras.ops.rms_normalization: eager with numpy (Keras 3's
formulas), and inside a model the layers' ops: LayerNormOp (oneDNN's layer normalization
primitive) over trailing axes, else the fused numba AxisNormalizationOp
(kiln/ops/layer_norm.py, axis_normalization.py).

Inside a layer's `call()`, gamma / beta / scale that are weights of that layer (`add_weight`)
become the op's own parameters, so they train, as LayerNormalization's do. Other values (a
Python number, a numpy array, another tensor) are applied after the normalization with
keras.ops.multiply / add, as Keras's formula does.
"""

import warnings

import numpy as np

from ...binding import constants as dnnl
from ...graph.symbolic import SymbolicTensor, apply
from ...ops import axis_normalization_kernels as kernels
from ...ops.axis_normalization import AxisNormalizationOp, layer_view
from ...ops.layer_norm import layer_norm_op
from ..backend import epsilon as default_epsilon
from ..layers.custom_weights import bind_dims
from ..layers.weight import Weight
from .core import keras_array, op_name, result, where
from .elementwise import add, multiply


def _model_axes(function, x, axis):
    """`axis` as sorted positive consecutive axes of x, the batch axis excluded."""
    rank = len(x.shape)
    values = list(axis) if isinstance(axis, (list, tuple)) else [axis]
    if not values or not all(isinstance(v, (int, np.integer)) and -rank <= v < rank
                             and v % rank != 0 for v in values):
        raise ValueError(f"{where()}: keras.ops.{function} argument axis must name axes of "
                         f"the input of shape {x.shape} other than the batch axis inside a "
                         f"model, got {axis!r}")
    axes = sorted({int(v) % rank for v in values})
    if axes != list(range(axes[0], axes[-1] + 1)):
        raise ValueError(f"{where()}: keras.ops.{function} argument axis must list "
                         f"consecutive axes inside a model, got {axis!r}")
    return axes


def _fusable(function, weights, x, axes):
    """The short names of the weights (None where absent or not fusable) and the op name:
    weights of one layer, each with one value per normalized position, become the op's
    parameters; anything else is applied afterwards (then beta too: gamma scales first)."""
    count = int(np.prod([x.shape[a] for a in axes]))
    owners = {w.path.rsplit("/", 1)[0] for w in weights if isinstance(w, Weight)}
    fits = [isinstance(w, Weight) and len(owners) == 1 and count > 1
            and int(np.prod(w.shape or (1,))) == count for w in weights]
    if weights[0] is not None and not fits[0]:
        fits = [False] * len(weights)
    names = []
    for w, fit in zip(weights, fits, strict=True):
        if fit:
            bind_dims(w, (count,), dnnl.a, where())
        names.append(w.path.rsplit("/", 1)[1] if fit else None)
    owner = owners.pop() if any(fits) else op_name(function)
    return names, owner


def _broadcast(value, x, axes):
    """Keras's `_broadcast`: a constant of the normalized axes' shape reshaped to broadcast
    against x when the axes are not just the last one."""
    if value is None or isinstance(value, (SymbolicTensor, Weight)) or np.ndim(value) == 0:
        return value
    array = keras_array(value)
    rank = len(x.shape)
    if array.ndim != rank and axes != [rank - 1]:
        shape = [1] * rank
        for a in axes:
            shape[a] = x.shape[a]
        array = array.reshape(shape)
    return array


def _apply_rest(y, x, axes, gamma, beta, names):
    if gamma is not None and names[0] is None:
        y = multiply(y, _broadcast(gamma, x, axes))
    if beta is not None and names[1] is None:
        y = add(y, _broadcast(beta, x, axes))
    return y


def _symbolic_layer_norm(x, gamma, beta, axis, epsilon, rms_scaling):
    axes = _model_axes("layer_normalization", x, axis)
    if rms_scaling:
        beta = None  # Keras's deprecated rms_scaling ignores beta
    names, owner = _fusable("layer_normalization", (gamma, beta), x, axes)
    op = layer_norm_op(owner, axes, epsilon, center=names[1] is not None,
                       scale=names[0] is not None, rms_scaling=rms_scaling,
                       data_format=x.data_format, flattened=x.flattened, rank=len(x.shape),
                       weight_names=tuple(names))
    return _apply_rest(apply(op, x), x, axes, gamma, beta, names)


def _eager_layer_norm(x, gamma, beta, axis, epsilon, rms_scaling):
    """Keras 3's _layer_normalization, in float32 numpy."""
    x = keras_array(x).astype(np.float32)
    axes = sorted(a % x.ndim for a in ([axis] if isinstance(axis, int) else axis))
    gamma, beta = (None if v is None else np.float32(1) * keras_array(v)
                   for v in (gamma, beta))
    shape = [x.shape[a] if a in axes else 1 for a in range(x.ndim)]

    def broadcast(v):
        if v is not None and v.ndim != x.ndim and axes != [x.ndim - 1]:
            return v.reshape(shape)
        return v

    if rms_scaling:
        y = x / np.sqrt(x.var(axis=tuple(axes), keepdims=True) + epsilon)
        return y if gamma is None else y * broadcast(gamma)
    mean = x.mean(axis=tuple(axes), keepdims=True)
    inverse = 1.0 / np.sqrt(x.var(axis=tuple(axes), keepdims=True) + epsilon)
    if gamma is not None:
        inverse = inverse * broadcast(gamma)
    shift = -mean * inverse
    if beta is not None:
        shift = shift + broadcast(beta)
    return x * inverse + shift


def layer_normalization(x, gamma=None, beta=None, axis=-1, epsilon=None, **kwargs):
    """Keras 3's layer normalization: (x - mean) / sqrt(var + epsilon) * gamma + beta over
    `axis`; epsilon defaults to keras.backend.epsilon() (1e-7)."""
    rms_scaling = kwargs.pop("rms_scaling", False)
    if kwargs:
        raise TypeError(f"{where()}: keras.ops.layer_normalization got unexpected keyword "
                        f"argument(s) {sorted(kwargs)}")
    if rms_scaling:
        warnings.warn("You passed `rms_scaling=True`, which is deprecated. This argument "
                      "incorrectly scales the input by the variance, not the root mean "
                      "square. To correctly use RMS Normalization, please use "
                      "`keras.ops.rms_normalization` / `keras.ops.nn.rms_normalization` "
                      "instead.", stacklevel=2)
    epsilon = default_epsilon() if epsilon is None else float(epsilon)
    if isinstance(x, SymbolicTensor):
        return _symbolic_layer_norm(x, gamma, beta, axis, epsilon, rms_scaling)
    return result(_eager_layer_norm(x, gamma, beta, axis, epsilon, rms_scaling))


def rms_normalization(x, scale=None, axis=-1, epsilon=None):
    """Keras 3's RMS normalization: x * rsqrt(mean(x^2) + epsilon) * scale over `axis`;
    epsilon defaults to keras.backend.epsilon() (1e-7)."""
    epsilon = default_epsilon() if epsilon is None else float(epsilon)
    if isinstance(x, SymbolicTensor):
        axes = _model_axes("rms_normalization", x, axis)
        (name,), owner = _fusable("rms_normalization", (scale,), x, axes)
        op = AxisNormalizationOp(
            owner, "keras.ops.rms_normalization",
            lambda shape: layer_view(shape, axes, f"{where()}: keras.ops.rms_normalization"),
            kernels.ROOT_MEAN_SQUARE, epsilon, (name, None), x.data_format, x.flattened)
        return _apply_rest(apply(op, x), x, axes, scale, None, (name, None))
    array = keras_array(x).astype(np.float32)
    if array.ndim == 0:
        array = array[None]
    axes = tuple(sorted(a % array.ndim for a in ([axis] if isinstance(axis, int) else axis)))
    y = array / np.sqrt(np.mean(np.square(array), axis=axes, keepdims=True) + epsilon)
    return result(y if scale is None else y * keras_array(scale))
