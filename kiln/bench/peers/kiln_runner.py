"""kiln itself, through the same compiled step plans that fit() and predict() run."""

from .. import models
from . import synthetic

AVAILABLE = None


def unsupported(model, data_format, mode, precision):
    if precision == "bf16":
        from ...keras import mixed_precision
        if not mixed_precision.native_bf16():
            return "no native bf16 on this CPU"
    return None


def prepare(model, data_format, mode, precision):
    from ...keras import mixed_precision
    mixed_precision.set_global_policy("mixed_bfloat16" if precision == "bf16" else "float32")
    try:
        keras_model, _, batch = models.MODELS[model](data_format)
    finally:
        mixed_precision.set_global_policy("float32")
    x, y = synthetic.batch(model, data_format)
    keras_model.build()
    plan = keras_model._plan(mode == "train", batch)
    plan.inputs[...] = x
    if mode == "train":
        plan.labels[...] = y
        return plan.train_step
    return plan.predict_step
