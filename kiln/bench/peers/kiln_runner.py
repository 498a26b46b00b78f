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


def profile(model, data_format, mode, precision, steps, fit_rounds=5):
    """Median ms of every call of the plan, the step median measured without timers and the
    plan's buffer bytes (with and without reuse by liveness, scratchpad); for training, what
    fit() adds (fit_cost over `fit_rounds` rounds; 0 skips it)."""
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
    if mode == "train" and fit_rounds:
        result.update(fit_cost(model, data_format, precision, steps, fit_rounds))
    return result


def fit_cost(model, data_format, precision, steps, rounds=5, clock="wall"):
    """What fit() adds to the plan's steps, in ms: medians over `rounds` that each run a fit()
    epoch of `steps` batches, `steps` bare plan steps, an epoch of 3 * `steps` batches and
    `steps` bare plan steps again, on the same model, so the machine's state is the same for
    all. The slope between the two epoch lengths is what a step costs inside fit() (batch
    gathering, labels, metric read-back, callbacks), the intercept what each fit() call costs
    once (data checks, callbacks' set-up, epoch-end logs). The first fit() (plan building) is
    not counted. Each round also runs both epochs with the plan's step replaced by a no-op
    (the model's step hook): their slope is fit()'s own work per step, apart from any effect
    on the step itself. `clock`: "wall" (perf_counter) or "cpu" (the process's CPU time, all
    threads: steadier than wall time on a machine other jobs load, best with one thread).
    Keys: fit_step_ms (a `steps`-batch fit() call per step), fit_plan_step_ms, fit_slope_ms,
    fit_fixed_ms, fit_epoch_ms (the two epochs' medians), fit_steps, fit_own_slope_ms,
    fit_own_fixed_ms and fit_clock."""
    import time

    import numpy as np

    timer = {"wall": time.perf_counter, "cpu": time.process_time}[clock]
    keras_model, batch = build(model, data_format, precision)
    x, y = synthetic.batch(model, data_format)
    lengths = (steps, 3 * steps)
    data = {n: (np.concatenate([x] * n), np.concatenate([y] * n)) for n in lengths}
    keras_model.fit(*data[steps], batch_size=batch, epochs=1, verbose=0)
    plan = keras_model._plan(True, batch)
    fit_times = {n: [] for n in lengths}
    own_times = {n: [] for n in lengths}
    plan_times = []

    def timed_fit(n):
        start = timer()
        keras_model.fit(*data[n], batch_size=batch, epochs=1, verbose=0)
        return timer() - start

    for _ in range(rounds):
        for n in lengths:
            fit_times[n].append(timed_fit(n))
            plan.inputs[...] = x
            plan.labels[...] = y
            start = timer()
            for _ in range(steps):
                plan.train_step()
            plan_times.append((timer() - start) / steps)
            keras_model._step_hook = lambda plan: None
            try:
                own_times[n].append(timed_fit(n))
            finally:
                keras_model.__dict__.pop("_step_hook", None)
    short, long = (float(np.median(fit_times[n])) * 1e3 for n in lengths)
    own_short, own_long = (float(np.median(own_times[n])) * 1e3 for n in lengths)
    slope = (long - short) / (lengths[1] - lengths[0])
    own_slope = (own_long - own_short) / (lengths[1] - lengths[0])
    return {"fit_step_ms": short / steps, "fit_plan_step_ms": float(np.median(plan_times)) * 1e3,
            "fit_slope_ms": slope, "fit_fixed_ms": short - steps * slope,
            "fit_epoch_ms": [short, long], "fit_steps": list(lengths),
            "fit_own_slope_ms": own_slope, "fit_own_fixed_ms": own_short - steps * own_slope,
            "fit_clock": clock}


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
