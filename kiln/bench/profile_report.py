"""A kiln step's profile (StepPlan.profile: median seconds per call label), grouped the way a
reader asks "where does the time go": by kind of call (kiln.profiler.kinds: the oneDNN
primitive kind oneDNN reports, depthwise convolutions apart, kiln's numba kernels, the update
phase's entries), never by layer name, so any model's layers land in their kind. Each kind
has its share of the step and its rate: GFLOP/s and % of the same-run sgemm peak for the
compute-bound kinds (convolution, inner product, ...), GB/s and % of the same-run copy
bandwidth for the memory-bound ones (depthwise convolution, batch norm, binary, pooling,
eltwise, reorder, sum, ...); then the step's rate and the plan's buffer bytes."""

from ..profiler.calls import describe
from ..profiler.kinds import by_kind
from ..profiler.table import kind_lines, planned_bytes_line


def label_entries(plan, seconds_per_label):
    """(kind, calls, seconds, flops, bytes) per call label of `plan`, with the seconds of
    `seconds_per_label` (StepPlan.profile); the calls sharing a label (a sub-batched layer's)
    are added up, as StepPlan.profile adds up their times."""
    facts = {}
    for info in describe(plan):
        kind, calls, flops, moved = facts.get(info.label, (info.kind, 0, 0.0, 0))
        facts[info.label] = (kind, calls + 1, flops + info.flops, moved + info.bytes)
    return [(kind, calls, seconds_per_label[label], flops, moved)
            for label, (kind, calls, flops, moved) in facts.items()]


def grouped(plan, seconds_per_label, peaks):
    """kinds.by_kind rows of a plan's profile, slowest kind first."""
    return by_kind(label_entries(plan, seconds_per_label), peaks)


def lines(plan, seconds_per_label, step_ms, peaks):
    """The kinds table, the step's rate and the plan's buffer bytes, indented."""
    rows = grouped(plan, seconds_per_label, peaks)
    out = kind_lines(rows, step_ms / 1e3)
    flops = sum(row["flops"] for row in rows)
    gflops = flops / step_ms / 1e6
    out.append(f"step {step_ms:.2f} ms: {flops / 1e9:.2f} GFLOP counted in its calls, "
               f"{gflops:.1f} GFLOP/s, {100 * gflops / peaks['matmul_gflops']:.1f}% of the "
               f"same-run sgemm peak {peaks['matmul_gflops']:.1f} GFLOP/s (copy bandwidth "
               f"{peaks['copy_gbps']:.1f} GB/s)")
    out.append(planned_bytes_line(plan.planned_bytes))
    return ["  " + line for line in out]
