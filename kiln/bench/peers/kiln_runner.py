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


def build(model, data_format, precision):
    """(Keras model, batch size) under the precision's policy (restored to float32 after)."""
    from ...keras import mixed_precision
    mixed_precision.set_global_policy("mixed_bfloat16" if precision == "bf16" else "float32")
    try:
        keras_model, _, batch = models.MODELS[model](data_format)
    finally:
        mixed_precision.set_global_policy("float32")
    return keras_model, batch


def prepare(model, data_format, mode, precision):
    keras_model, batch = build(model, data_format, precision)
    x, y = synthetic.batch(model, data_format)
    if not keras_model.built:  # a functional model is built when it is made
        keras_model.build()
    plan = keras_model._plan(mode == "train", batch)
    plan.inputs[...] = x
    if mode == "train":
        plan.labels[...] = y
        return plan.train_step
    return plan.predict_step


def profile(model, data_format, mode, precision, steps):
    """Median ms of every call of the plan, the step median measured without timers and the
    plan's buffer bytes (with and without reuse by liveness, scratchpad)."""
    import time

    import numpy as np

    step = prepare(model, data_format, mode, precision)
    plan = step.__self__
    for _ in range(3):
        step()
    times = []
    for _ in range(steps):
        start = time.perf_counter()
        step()
        times.append(time.perf_counter() - start)
    calls = {label: seconds * 1e3 for label, seconds in plan.profile(steps).items()}
    result = {"step_ms": float(np.median(times)) * 1e3, "calls_ms": calls,
              "planned_bytes": dict(plan.planned_bytes)}
    if mode == "train":
        result["fit_step_ms"], result["fit_plan_step_ms"] = fit_step_ms(
            model, data_format, precision, steps)
    return result


def fit_step_ms(model, data_format, precision, steps, rounds=5):
    """(fit() ms per step, plan ms per step), medians over `rounds` that alternate a whole
    fit() epoch of `steps` batches with `steps` bare plan steps on the same model, so the
    machine's state is the same for both. fit() adds batch gathering, callbacks and logs;
    the first epoch (plan building) is not counted."""
    import time

    import numpy as np

    keras_model, batch = build(model, data_format, precision)
    x, y = synthetic.batch(model, data_format)
    many_x, many_y = np.concatenate([x] * steps), np.concatenate([y] * steps)
    keras_model.fit(many_x, many_y, batch_size=batch, epochs=1, verbose=0)
    plan = keras_model._plan(True, batch)
    fit_times, plan_times = [], []
    for _ in range(rounds):
        start = time.perf_counter()
        keras_model.fit(many_x, many_y, batch_size=batch, epochs=1, verbose=0)
        fit_times.append((time.perf_counter() - start) / steps)
        plan.inputs[...] = x
        plan.labels[...] = y
        start = time.perf_counter()
        for _ in range(steps):
            plan.train_step()
        plan_times.append((time.perf_counter() - start) / steps)
    return float(np.median(fit_times)) * 1e3, float(np.median(plan_times)) * 1e3


def seconds_to_first_step(model, data_format):
    """From a new model to the end of its first fit() batch: plan building, primitive creation
    and kernel loading (numba's cache is warm after any earlier run)."""
    import time

    import numpy as np

    from ...keras.callbacks import Callback

    start = time.perf_counter()
    keras_model, _, batch = models.MODELS[model](data_format)
    x, y = synthetic.batch(model, data_format)
    marks = []

    class FirstBatch(Callback):
        def on_train_batch_end(self, batch_index, logs=None):
            marks.append(time.perf_counter())

    keras_model.fit(np.concatenate([x, x]), np.concatenate([y, y]), batch_size=batch,
                    epochs=1, verbose=0, callbacks=[FirstBatch()])
    return marks[0] - start
