"""Weights of custom layers: Keras's `add_weight(shape, initializer, ...)`, and the logical
dims the engine reads such a weight with once `call()` uses it.

A built-in layer knows which op reads its weight and creates it in that op's logical dims.
A custom layer's weight is created before anyone knows how `call()` will use it: it is stored
in its Keras shape (plain row-major layout), and `bind_dims` re-describes it when a
`keras.ops` call makes it an op's parameter (a per-channel (C,) scale on a channels_last
(N, H, W, C) tensor is read as logical (1, C, 1, 1)). The bytes stay those of the Keras value.
"""

import numpy as np

from ...binding import constants as dnnl
from ...plan.parameters import Parameter
from .. import constraints, initializers, regularizers

# Keras 3's keyword arguments of add_weight, with their defaults
KERAS_DEFAULTS = {"shape": None, "initializer": None, "dtype": None, "trainable": True,
                  "autocast": True, "regularizer": None, "constraint": None,
                  "aggregation": "none", "overwrite_with_gradient": False, "name": None}
# Keras 2's positional order, accepted when the first positional argument is the name
KERAS2_ORDER = ("name", "shape", "dtype", "initializer", "regularizer", "trainable",
                "constraint")
KERAS3_ORDER = ("shape", "initializer", "dtype")
PLAIN_TAGS = {1: dnnl.a, 2: dnnl.ab, 3: dnnl.abc, 4: dnnl.abcd, 5: dnnl.abcde}


def plain_tag(rank):
    return PLAIN_TAGS[max(rank, 1)]


def _arguments(layer, args, kwargs):
    order = KERAS2_ORDER if args and isinstance(args[0], str) else KERAS3_ORDER
    if len(args) > len(order):
        raise TypeError(f"{layer.context}: add_weight() takes at most {len(order)} positional "
                        f"arguments, got {len(args)}")
    unknown = sorted(set(kwargs) - set(KERAS_DEFAULTS) - {"use_resource", "synchronization",
                                                            "experimental_autocast"})
    if unknown:
        raise TypeError(f"{layer.context}: add_weight() got unexpected keyword argument(s) "
                        f"{unknown}; expected some of {sorted(KERAS_DEFAULTS)}")
    values = dict(KERAS_DEFAULTS)
    for key, value in zip(order, args, strict=False):
        if key in kwargs:
            raise TypeError(f"{layer.context}: add_weight() got argument {key!r} both "
                            "positionally and as a keyword")
        values[key] = value
    values.update({k: v for k, v in kwargs.items() if k in KERAS_DEFAULTS})
    return values


def keras_weight(layer, args, kwargs):
    """`layer.add_weight(...)` in Keras 3's (or Keras 2's) form: a Weight of Keras shape
    `shape` (default scalar), `initializer` default 'glorot_uniform' as Keras for floats."""
    from .base_layer import unique_name

    values = _arguments(layer, args, kwargs)
    shape = () if values["shape"] is None else values["shape"]
    try:
        shape = tuple(int(d) for d in shape)
    except TypeError:
        raise ValueError(f"{layer.context}: add_weight() argument shape must be a tuple of "
                         f"ints, got {values['shape']!r}") from None
    if any(d is None or d < 0 for d in shape):
        raise ValueError(f"{layer.context}: add_weight() argument shape must be fully "
                         f"defined, got {values['shape']!r}")
    dtype = getattr(values["dtype"], "name", values["dtype"])
    if dtype not in (None, "float32"):
        raise ValueError(f"{layer.context}: add_weight() argument dtype must be 'float32' "
                         f"(kiln's weights are float32), got {values['dtype']!r}")
    name = values["name"]
    if name is None:  # Keras names unnamed variables 'variable', 'variable_1', ... per session
        name = unique_name("Variable")
    if not isinstance(name, str) or "/" in name:
        raise ValueError(f"{layer.context}: add_weight() argument name must be a string "
                         f"without '/', got {name!r}")
    initializer = initializers.get(values["initializer"] or "glorot_uniform", layer.context,
                                   f"initializer of weight '{name}'")
    regularizer = regularizers.get(values["regularizer"], layer.context,
                                   f"regularizer of weight '{name}'")
    constraint = constraints.get(values["constraint"], layer.context,
                                 f"constraint of weight '{name}'")
    trainable = True if values["trainable"] is None else bool(values["trainable"])
    dims = shape if shape else (1,)
    weight = layer.add_engine_weight(name, shape, initializer, dims, plain_tag(len(dims)),
                                     trainable=trainable, regularizer=regularizer,
                                     constraint=constraint)
    weight.custom = True  # its logical dims follow its use (bind_dims)
    return weight


def bind_dims(weight, dims, tag, context):
    """Describe `weight` (made by `keras_weight`) as logical `dims` in layout `tag` for the op
    that reads it. Allowed until a plan lays the value out; afterwards only the same dims."""
    dims = tuple(dims)
    store = weight.store
    parameter = store.parameters[weight.path]
    if (parameter.dims, parameter.user_tag) == (dims, tag):
        return
    if int(np.prod(dims)) != int(np.prod(parameter.keras_shape or (1,))):
        raise ValueError(f"{context}: weight '{weight.path}' of shape {weight.shape} cannot "
                         f"be read as logical dims {dims}")
    if not getattr(weight, "custom", False) or parameter.value is not None:
        raise ValueError(f"{context}: weight '{weight.path}' is already read as logical dims "
                         f"{parameter.dims}; a weight is read with one shape per model "
                         f"(here {dims})")
    replacement = Parameter(parameter.name, dims, tag,
                            parameter.pending_value.reshape(parameter.keras_shape),
                            parameter.trainable)
    replacement.l1, replacement.l2 = parameter.l1, parameter.l2
    replacement.constraint, replacement.penalty = parameter.constraint, parameter.penalty
    store.parameters[weight.path] = replacement
    store.stale = True
