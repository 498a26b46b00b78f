"""One step of a plan with a clock read around every call: what `StepPlan.profile` and
kiln.profiler read.

`StepPlan.train_step()` stays a bare loop over bound methods; a timed step runs the same
calls in the same order, then the same update phase (train_step's own order: the
data-parallel gradient reduction, the weight penalties, the optimizer, the constraints), so
the weights come out of it exactly as out of train_step.
"""

import time


def update_phase(plan):
    """[(label, run)] of what a training plan runs after its calls, in train_step's order;
    empty for evaluation and inference plans."""
    if not plan.training:
        return []
    entries = []
    reducer = getattr(plan, "gradient_reducer", None)
    if reducer is not None:
        entries.append(("gradient reduction", reducer))
    if plan._penalties:
        def penalties():
            plan._penalty = plan._penalties.apply()
        entries.append(("weight penalties", penalties))
    if plan.parameters.trainable_size:
        entries.append(("optimizer update", plan._update))
    if plan._constraints:
        entries.append(("constraints", plan._constraints.apply))
    return entries


def step_labels(plan):
    """The label of every entry timed_step times, in its order."""
    return [call.label for call in plan.calls] + [label for label, _ in update_phase(plan)]


def timed_step(plan, clock=time.perf_counter_ns):
    """Run one step of `plan` (a training plan's calls and update phase, or another plan's
    calls) and return [(start, end)] of clock readings, one per entry of step_labels(plan).
    A training plan's stats are then `plan._total_loss()`, as train_step returns them."""
    times = []
    for call in plan.calls:
        start = clock()
        call.run()
        times.append((start, clock()))
    if plan.training:
        plan._penalty = 0.0  # as train_step, when no weight has a penalty
    for _, run in update_phase(plan):
        start = clock()
        run()
        times.append((start, clock()))
    return times
