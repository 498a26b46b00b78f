"""kiln's profiler: where a training step's time goes, call by call, with Keras layer names.

    profile = kiln.profiler.profile(model, x, y, batch_size=128, steps=10)
    print(profile)                        # calls sorted by time, layers, overhead, peaks
    profile.save_trace("step.json")       # chrome://tracing or ui.perfetto.dev
    profile.save_tensorboard("logs/train")  # TensorBoard's profile plugin

The same recording backs `kiln profile script.py` and the TensorBoard callback's
`profile_batch`. With no profile running, a step runs exactly as it always does.
"""

import numpy as np

from .peak import copy_gbps, sgemm_gflops
from .recorder import RECORD, Session, alternating, recorded_train_step
from .report import Profile

__all__ = ["Profile", "Session", "alternating", "measure_peaks", "profile",
           "recorded_train_step", "RECORD"]


def measure_peaks():
    """The same-run peaks percentages are taken of: sgemm GFLOP/s and copy GB/s (best of a
    few runs each, about a second together)."""
    return {"matmul_gflops": sgemm_gflops(size=2048, repeats=5),
            "copy_gbps": copy_gbps(megabytes=32, repeats=5)}


def _check_count(value, name, minimum):
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise ValueError(f"kiln.profiler.profile: argument {name} must be an integer >= "
                         f"{minimum}, got {value!r}")


def profile(model, x=None, y=None, batch_size=32, steps=10, warmup=3, peaks=None):
    """Record `steps` training steps of a compiled model, call by call.

    The steps are real training steps on one batch (the model's weights change, as with
    train_on_batch): `warmup` untouched steps first, then `steps` plain steps and `steps`
    recorded steps taking turns, the plain ones timed to measure the profiler's overhead.

    Args:
        model: a compiled kiln.keras Model.
        x, y: data to take the batch from (the first `batch_size` samples); without x, a
            random normal input and all-zero labels of the plan's shapes.
        batch_size: samples per step.
        steps: recorded steps (as many plain ones run in turn).
        warmup: steps run untouched first.
        peaks: {'matmul_gflops', 'copy_gbps'} to take percentages of; measured after the
            steps when None (measure_peaks()).

    Returns: a Profile (print it for the table).
    """
    if not getattr(model, "compiled", False):
        raise RuntimeError("kiln.profiler.profile: the model must be compiled first")
    _check_count(steps, "steps", 1)
    _check_count(warmup, "warmup", 0)
    _check_count(batch_size, "batch_size", 1)
    if x is not None and y is None:
        raise ValueError("kiln.profiler.profile: argument y is required when x is given")
    total = warmup + 2 * steps
    with Session(model, alternating(warmup, steps)) as session:
        if x is None:
            plan = model._plan(True, batch_size)
            rng = np.random.default_rng(0)
            for array in plan.input_arrays:
                array[...] = rng.standard_normal(array.shape, dtype=np.float32)
            for view in plan.heads:
                view.labels[...] = 0
            for _ in range(total):
                session.train_step(plan)
        else:
            xs = [a[:batch_size] for a in x] if isinstance(x, (list, tuple)) else x[:batch_size]
            ys = [a[:batch_size] for a in y] if isinstance(y, (list, tuple)) else y[:batch_size]
            for _ in range(total):
                model.train_on_batch(xs, ys)
    return Profile(model, session.records, session.plain_ns, peaks or measure_peaks())
