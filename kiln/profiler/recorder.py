"""Recording a model's training steps entry by entry, without touching the step when off.

A plan's `train_step()` runs its entries (kiln.plan.step_list). While a Session is active it
is the model's step hook: `model._step_hook`, which the trainer consults before each training
step (kiln.keras.trainers.batch_steps.BatchRunner), runs the step in the plan's place.
Depending on the session's schedule it runs the plain step untouched (warm-up), times the
plain step as a whole (to measure the profiler's overhead), or runs the plan's timed step:
the same entries in the same order with `perf_counter_ns` around each
(StepPlan.timed_train_step, whose timed_step StepPlan.profile runs too). When the session
stops the hook is cleared; nothing of the plans was changed.
"""

import time

SKIP, PLAIN, RECORD = "skip", "plain", "record"


def recorded_train_step(plan, clock=time.perf_counter_ns):
    """plan.train_step() with each entry timed: returns (stats, [(start_ns, end_ns), ...]
    one per entry of plan.entries: the calls, then the update phase)."""
    return plan.timed_train_step(clock)


class StepRecord:
    """One recorded step: its plan, start and end (ns) and each entry's (start, end)."""

    __slots__ = ("plan", "start", "end", "times")

    def __init__(self, plan, start, end, times):
        self.plan, self.start, self.end, self.times = plan, start, end, times


class Session:
    """Profiles the training steps a model runs while active: fit's and train_on_batch's
    through the model's step hook, and those of plans given to `train_step(plan)`.

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
        self.active = False

    def start(self):
        if getattr(self.model, "_step_hook", None) is not None:
            raise RuntimeError(f"kiln.profiler: model '{self.model.name}' is already being "
                               "profiled")
        self.model._step_hook = self.train_step
        self.active = True
        return self

    def stop(self):
        if self.model.__dict__.get("_step_hook") == self.train_step:
            del self.model.__dict__["_step_hook"]  # the model as it was before
        self.active = False
        return self

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()

    def train_step(self, plan):
        """One training step of `plan` as the schedule says (the model's step hook, and what
        profile() runs on a plan it took from the model); returns its stats."""
        mode = self.schedule(self.steps)
        self.steps += 1
        if mode == RECORD:
            start = time.perf_counter_ns()
            stats, times = plan.timed_train_step()
            self.records.append(StepRecord(plan, start, time.perf_counter_ns(), times))
            return stats
        if mode == PLAIN:
            start = time.perf_counter_ns()
            stats = plan.train_step()
            self.plain_ns.append(time.perf_counter_ns() - start)
            return stats
        return plan.train_step()


def alternating(warmup, steps):
    """A schedule: `warmup` untouched steps, then plain and recorded steps taking turns
    (`steps` of each), so that both see the same machine state; untouched after."""
    def schedule(index):
        index -= warmup
        if index < 0 or index >= 2 * steps:
            return SKIP
        return PLAIN if index % 2 == 0 else RECORD
    return schedule
