"""With no profile running, a plan's step is the one it always was: the Session only sets
the model's step hook, which the trainer consults, and clears it when it stops; the plans'
entries and their run path are never changed."""

import subprocess
import sys

from small_model import BATCH, data, small_model

from kiln.plan.step_plan import StepPlan
from kiln.profiler import Session
from kiln.profiler.recorder import PLAIN, RECORD, SKIP, alternating


def test_the_step_is_untouched_once_the_session_stops():
    model = small_model()
    x, y = data()
    model.train_on_batch(x, y)
    plan = model._plan(True, BATCH)
    calls, runs, entries = list(plan.calls), plan._runs, plan.entries
    modes = iter([RECORD, PLAIN, SKIP])
    with Session(model, lambda index: next(modes)) as session:
        assert model._plan(True, BATCH) is plan
        assert model._step_hook == session.train_step  # the trainer's hook while profiling
        for _ in range(3):
            model.train_on_batch(x, y)
    assert session.steps == 3 and len(session.records) == 1 and len(session.plain_ns) == 1
    # the calls, then the update phase: l2 penalty, Adam, max-norm constraint
    assert len(session.records[0].times) == len(calls) + 3
    assert "train_step" not in plan.__dict__ and "_plan" not in model.__dict__
    assert "_step_hook" not in model.__dict__
    assert plan.train_step.__func__ is StepPlan.train_step
    assert plan._runs is runs and all(a is b for a, b in zip(plan.calls, calls, strict=True))
    assert plan.entries is entries
    assert all(run.__self__ is call for run, call in zip(runs, calls))
    assert all(entry.run is run for entry, run in zip(entries, runs, strict=True))
    assert model._plan(True, BATCH) is plan


def test_alternating_schedule():
    schedule = alternating(warmup=2, steps=2)
    assert [schedule(i) for i in range(7)] == [SKIP, SKIP, PLAIN, RECORD, PLAIN, RECORD, SKIP]


def test_the_profiler_sits_on_the_engine_only():
    # the TensorBoard callback imports it: it must not import the Keras front end back
    code = ("import sys, kiln.profiler, kiln.profiler.batches, kiln.profiler.trace; "
            "print(sorted(m for m in sys.modules if m.startswith('kiln.')))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            check=True)
    modules = result.stdout
    assert "kiln.profiler.recorder" in modules and "kiln.keras" not in modules
