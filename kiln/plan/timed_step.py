"""One step of a plan with a clock read around every entry: what `StepPlan.profile`,
`StepPlan.timed_train_step` and kiln.profiler read.

A timed step runs the plan's `entries` (step_list.py), the same list whose callables the
plain step runs, so the weights come out of it exactly as out of train_step; only the
clock readings are added. The plain step stays a bare loop over a prebuilt tuple.
"""

import time

import numpy as np


def step_labels(plan):
    """The label of every entry timed_step times, in its order."""
    return [entry.label for entry in plan.entries]


def timed_step(plan, clock=time.perf_counter_ns):
    """Run one step of `plan` (its entries: a training plan's calls and update phase, an
    evaluation plan's calls and weight penalties, an inference plan's calls) and return
    [(start, end)] of clock readings, one per entry. A training plan's stats are then
    `plan._total_loss()`, as train_step returns them."""
    times = []
    for entry in plan.entries:
        start = clock()
        entry.run()
        times.append((start, clock()))
    return times


def median_seconds(plan, steps):
    """{label: median seconds per step} over `steps` timed steps (entries sharing a label, a
    sub-batched layer's, added up within a step), plus 'outside calls': the step's time
    outside its entries (Python and dispatch around the list)."""
    labels = step_labels(plan)
    samples = {label: [] for label in labels}
    overhead = []
    for _ in range(steps):
        step_start = time.perf_counter_ns()
        times = timed_step(plan)
        total = time.perf_counter_ns() - step_start
        per_label = dict.fromkeys(samples, 0)
        for label, (start, end) in zip(labels, times, strict=True):
            per_label[label] += end - start
        for label, elapsed in per_label.items():
            samples[label].append(elapsed * 1e-9)
        overhead.append((total - sum(end - start for start, end in times)) * 1e-9)
    result = {label: float(np.median(v)) for label, v in samples.items()}
    result["outside calls"] = float(np.median(overhead))
    return result
