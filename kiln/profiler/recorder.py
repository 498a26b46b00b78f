"""Recording a model's training steps call by call, without touching the step when off.

A plan's `train_step()` runs its list of calls, then the update. While a Session is active,
each training plan the model hands out gets an instance attribute `train_step` that shadows
the class's method: depending on the session's schedule it runs the plain step untouched
(warm-up), times the plain step as a whole (to measure the profiler's overhead), or runs
`recorded_train_step`: the same calls in the same order with `perf_counter_ns` around each
(kiln.plan.timed_step, which StepPlan.profile runs too).
When the session stops, those attributes (and the hook on the model's `_plan`) are deleted:
the plan's call objects and run path are what they were before.
"""

import time

from ..plan.timed_step import timed_step

SKIP, PLAIN, RECORD = "skip", "plain", "record"


def recorded_train_step(plan, clock=time.perf_counter_ns):
    """plan.train_step() with each call timed (kiln.plan.timed_step): returns (stats,
    [(start_ns, end_ns), ...] for the calls of plan.calls, then the update phase)."""
    times = timed_step(plan, clock)
    return plan._total_loss(), times


class StepRecord:
    """One recorded step: its plan, start and end (ns) and each entry's (start, end)."""

    __slots__ = ("plan", "start", "end", "times")

    def __init__(self, plan, start, end, times):
        self.plan, self.start, self.end, self.times = plan, start, end, times


class Session:
    """Profiles the training steps a model runs while active (fit, train_on_batch or a plan
    taken from the model).

    Args:
        model: a compiled kiln.keras Model.
        schedule: step number (0-based, counted while active) -> SKIP, PLAIN or RECORD.

    After stop(): `records` (StepRecord list) and `plain_ns` (whole plain steps' ns).
    """

    def __init__(self, model, schedule):
        self.model = model
        self.schedule = schedule
        self.steps = 0
        self.records = []
        self.plain_ns = []
        self._plans = []
        self.active = False

    def start(self):
        if "_plan" in self.model.__dict__:
            raise RuntimeError(f"kiln.profiler: model '{self.model.name}' is already being "
                               "profiled")
        model_plan = self.model._plan

        def plan_with_recording(training, batch_size, evaluate=False):
            plan = model_plan(training, batch_size, evaluate)
            if training and not evaluate and "train_step" not in plan.__dict__:
                plan.train_step = self._step_function(plan)
                self._plans.append(plan)
            return plan

        self.model._plan = plan_with_recording
        self.active = True
        return self

    def stop(self):
        self.model.__dict__.pop("_plan", None)
        for plan in self._plans:
            plan.__dict__.pop("train_step", None)
        self._plans = []
        self.active = False
        return self

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()

    def _step_function(self, plan):
        plain_step = type(plan).train_step.__get__(plan)

        def train_step():
            mode = self.schedule(self.steps)
            self.steps += 1
            if mode == RECORD:
                start = time.perf_counter_ns()
                stats, times = recorded_train_step(plan)
                self.records.append(StepRecord(plan, start, time.perf_counter_ns(), times))
                return stats
            if mode == PLAIN:
                start = time.perf_counter_ns()
                stats = plain_step()
                self.plain_ns.append(time.perf_counter_ns() - start)
                return stats
            return plain_step()

        return train_step


def alternating(warmup, steps):
    """A schedule: `warmup` untouched steps, then plain and recorded steps taking turns
    (`steps` of each), so that both see the same machine state; untouched after."""
    def schedule(index):
        index -= warmup
        if index < 0 or index >= 2 * steps:
            return SKIP
        return PLAIN if index % 2 == 0 else RECORD
    return schedule
