"""Subclassed models (`class Net(keras.Model)`) in .keras files, as Keras 3 saves them.

Keras 3 describes a subclassed model by its constructor arguments (keras/src/ops/operation.py's
automatic config: the arguments when all are plain values, plus `trainable` and `dtype`), saves
it under its class name (`registered_name`; loading needs the class in `custom_objects` or
registered) and records the input shape of its first call as `build_config`. Loading makes the
model with `cls(**config)`, builds it from that shape (kiln traces `call()` there), then reads
the weights, which sit under the attribute paths of the layers the model holds, as Keras's.
"""

from ..layers.dtype_policies import policy_config


def subclassed_config(model):
    """`get_config()` of a subclassed model that does not define one, as Keras 3's."""
    auto = model.__dict__.get("_auto_config")
    if auto is None:
        raise ValueError(f"{model.context}: get_config() cannot be generated because the "
                         f"constructor of {type(model).__name__} takes arguments that are not "
                         "plain values (str, int, float, bool, None); define get_config() and, "
                         "if needed, from_config() to save the model")
    return {**auto, "trainable": model.trainable, "dtype": policy_config(model.policy_name)}


def subclassed_build_config(model):
    """The input shape(s) the traced model was built with (batch first)."""
    shapes = [[None if d is None else int(d) for d in tensor.shape] for tensor in model.inputs]
    return {"input_shape": shapes[0] if len(shapes) == 1 else shapes}


def _is_shape(value):
    return isinstance(value, (list, tuple)) and all(
        d is None or (isinstance(d, int) and not isinstance(d, bool)) for d in value)


def build_from_config(model, build_config, where):
    """Builds a subclassed model loaded from a file from its saved input shape, before its
    weights are read (they exist only once `call()` has been traced)."""
    shape = (build_config or {}).get("input_shape") if isinstance(build_config, dict) else None
    if _is_shape(shape) and shape:
        model.build(tuple(shape))
    elif isinstance(shape, list) and shape and all(_is_shape(item) and item for item in shape):
        model.build([tuple(item) for item in shape])
    else:
        raise ValueError(f"{where}: subclassed model {model.context} has no usable "
                         f"build_config (got {build_config!r}); Keras records the input shape "
                         "of the model's first call there, which kiln needs to build it before "
                         "reading its weights")
