"""Calling a layer or a model on arrays, as Keras 3 runs them eagerly:

    y = keras.layers.Dense(4)(np.ones((2, 3), "float32"))   # a numpy array (2, 4)
    y = model(x)                                             # as model.predict_on_batch(x)

kiln has no eager tensors: such a call runs through a compiled inference plan. A model is
called through its own plans (cached per batch size, as predict's). A layer is wrapped once
per input signature (shapes without the batch axis, dtypes, the other arguments) in a small
model of that one layer, built on the first call (so the layer builds then, as in Keras); the
wrapper and its plans are kept on the layer, so calling again with arrays of the same shapes
runs the same plan. The wrapper shares the layer's weights: a layer called on arrays and then
used in a model (or trained) shows one set of values.

`training=True` runs the layers as in training where that differs (Dropout drops, batch
normalization normalizes with the batch's statistics) through a training-mode forward plan
(no loss, no backward, no update), cached like the inference plans.
"""

import threading
from collections import OrderedDict

import numpy as np

from ...graph.symbolic import SymbolicTensor, tracing
from ...plan.plan_cache import cache_size
from ..variables import Variable
from .weight import Weight


def is_eager_call(args, kwargs):
    """Whether a layer is called on arrays (not symbolic tensors) outside any call()."""
    if tracing or not args:
        return False
    from .base_layer import flatten

    leaves = [t for t in flatten([args, kwargs]) if t is not None]
    if any(isinstance(t, SymbolicTensor) for t in leaves):
        return False
    return any(isinstance(t, (np.ndarray, np.generic, Variable, Weight)) for t in flatten(args))


def eager_call(layer, args, kwargs):
    """`layer(*args, **kwargs)` on arrays: the outputs as numpy arrays, in the layer's
    output structure."""
    kwargs = dict(kwargs)
    training = bool(kwargs.pop("training", None))
    if hasattr(layer, "_plans"):  # a model: its own plans
        if len(args) != 1 or kwargs:
            raise TypeError(f"{layer.context}: a model called on arrays takes its inputs (one "
                            "array, or a list / dict of them) and training=, got "
                            f"{len(args)} positional and {sorted(kwargs)} keyword arguments")
        return run_model(layer, args[0], training)
    from .base_layer import flatten, pack_like

    for name, value in kwargs.items():
        if any(isinstance(t, (np.ndarray, Variable, Weight)) for t in flatten([value])):
            raise TypeError(f"{layer.context}: called on arrays, argument {name} must not be "
                            "an array yet (pass the layer's tensors positionally, or build a "
                            "model with keras.Input for it)")
    arrays = [_array(t, layer) for t in flatten(list(args))]
    model = _wrapper(layer, args, kwargs, arrays)
    outputs = run_model(model, arrays, training)
    return pack_like(model._layer_output_structure, flatten(outputs))


def _array(value, layer):
    if isinstance(value, (Variable, Weight)):
        value = value.numpy()
    array = np.asarray(value)
    if array.ndim < 1 or array.dtype.kind not in "fiub":
        raise ValueError(f"{layer.context}: called on arrays, each input must be a numeric "
                         f"array with a batch axis, got {type(value).__name__} of shape "
                         f"{array.shape} and dtype {array.dtype}")
    if array.dtype.kind in "iu":
        return array.astype(np.int32)
    return array.astype(np.float32)


_WRAPPERS_LOCK = threading.Lock()


def _wrapper(layer, args, kwargs, arrays):
    """The one-layer model for this input signature (made and built on the first call)."""
    from ..models.model import Functional
    from .base_layer import flatten, pack_like
    from .input_layer import Input

    key = (tuple((a.shape[1:], a.dtype.kind) for a in arrays),
           repr(sorted(kwargs.items())), len(args))
    # one lock: two threads calling a layer on a new signature trace it once; the wrappers
    # kept per layer are bounded like a model's plans (a layer called on many sequence
    # lengths would otherwise keep a model and its plans for each)
    with _WRAPPERS_LOCK:
        cache = layer.__dict__.setdefault("_eager_models", OrderedDict())
        model = cache.get(key)
        if model is not None:
            cache.move_to_end(key)
            return model
        inputs = [Input(shape=a.shape[1:], dtype="int32" if a.dtype.kind == "i" else None)
                  for a in arrays]
        structured = pack_like(list(args), inputs)
        outputs = layer(*structured, **kwargs)
        model = Functional(inputs=inputs, outputs=flatten(outputs),
                           name=f"{layer.name}_eager")
        model._layer_output_structure = outputs
        cache[key] = model
        while len(cache) > cache_size():
            cache.popitem(last=False)
    return model


def run_model(model, x, training=False):
    """The model's outputs on the batch `x` (as predict_on_batch), through its inference
    plan, or its training-mode forward plan with `training`."""
    from .base_layer import pack_like

    model._build_from_arrays(x)
    count = len(x[0] if isinstance(x, (list, tuple)) else
                next(iter(x.values())) if isinstance(x, dict) else x)
    if not training:
        return model._predict(x, max(count, 1), None, f"{model.context} called on arrays")
    from ..trainers.data_adapters import get_data_adapter

    adapter = get_data_adapter(x, None, None, max(count, 1), None, False,
                               signature=model._signature(f"{model.context} called on arrays"))
    try:
        (xs, _, _), = list(adapter.batches())
        with model._plans.lock:
            plan = model._plan("forward", len(xs[0]), inputs=xs)
            for array, value in zip(plan.input_arrays, xs, strict=True):
                array[...] = value
            plan.predict_step()
            outputs = [result.copy() for result in plan.output_arrays]
    finally:
        adapter.close()
    if len(outputs) == 1 and not isinstance(model._output_structure, dict):
        return outputs[0]
    return pack_like(model._output_structure, outputs)
