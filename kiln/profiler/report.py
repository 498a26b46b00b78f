"""A profile: the recorded steps of one plan, summarized per call and per layer.

Per call (calls with the same label, a sub-batched layer's, are added up within a step):
the median over the recorded steps of its time, its kind, FLOPs and bytes, and either GFLOP/s
and % of the same-run sgemm peak (compute-bound kinds: convolutions, inner products) or GB/s
and % of the same-run copy bandwidth (everything else, depthwise convolutions included, which
is memory-bound; kinds.py). Per kind, the same added up. The footer compares the recorded
step with the plain steps run in turn with it (that difference is the profiler's own
overhead) and gives the plan's buffer bytes.
"""

import numpy as np

from .calls import PHASES, describe
from .kinds import by_kind, rate


class Profile:
    """Args:
        model: the profiled kiln.keras Model.
        records: recorder.StepRecord list (the plan most of them ran is the one reported).
        plain_ns: durations of the plain steps run in turn with the recorded ones.
        peaks: {'matmul_gflops': float, 'copy_gbps': float}, measured in the same run.
    """

    def __init__(self, model, records, plain_ns, peaks):
        if not records:
            raise ValueError(f"kiln.profiler: no training step of model '{model.name}' was "
                             "recorded (did fit() run enough batches?)")
        plans = [record.plan for record in records]
        plan = max(plans, key=lambda p: sum(q is p for q in plans))
        self.model = model
        self.plan = plan
        self.records = [record for record in records if record.plan is plan]
        self.infos = describe(plan, model.graph)
        self.peaks = dict(peaks)
        self.batch_size = len(plan.inputs)
        # {'buffers', 'buffers_without_reuse', 'scratchpad'}: what the plan allocated
        self.planned_bytes = dict(plan.planned_bytes)
        # (steps, calls) seconds
        self.seconds = np.array([[(end - start) * 1e-9 for start, end in record.times]
                                 for record in self.records])
        self.step_seconds = np.array([(r.end - r.start) * 1e-9 for r in self.records])
        self.plain_seconds = np.array(plain_ns, dtype=np.float64) * 1e-9

    # -- per call -------------------------------------------------------------------------
    def rows(self):
        """One dict per (phase, label) in step order: phase, name, layers, label, primitive,
        implementation, kind, calls, seconds (median per step), flops, bytes, and gflops and
        pct_peak (compute-bound kinds), or gbps and pct_bandwidth (memory-bound ones)."""
        groups = {}
        for index, info in enumerate(self.infos):
            groups.setdefault((info.phase, info.label), []).append(index)
        rows = []
        for indices in groups.values():
            info = self.infos[indices[0]]
            seconds = float(np.median(self.seconds[:, indices].sum(axis=1)))
            flops = sum(self.infos[i].flops for i in indices)
            moved = sum(self.infos[i].bytes for i in indices)
            row = {"phase": info.phase, "name": info.name, "layers": info.layers,
                   "label": info.label, "primitive": info.primitive,
                   "implementation": info.implementation, "kind": info.kind,
                   "calls": len(indices), "seconds": seconds, "flops": flops, "bytes": moved}
            row.update(rate(info.kind, seconds, flops, moved, self.peaks))
            rows.append(row)
        return rows

    def kind_rows(self):
        """The calls added up per kind (kinds.by_kind), slowest kind first."""
        return by_kind(((row["kind"], row["calls"], row["seconds"], row["flops"], row["bytes"])
                        for row in self.rows()), self.peaks)

    # -- per layer ------------------------------------------------------------------------
    def layer_rows(self):
        """(name, forward seconds, backward seconds) for every layer of the model in order; a
        fused group ('conv2d+activation') is one row, a layer with no call of its own (a
        Flatten is a view) has zeros. The loss follows the layers; the update is left out."""
        seconds = {}
        for row in self.rows():
            if row["phase"] == "update":
                continue
            key = "+".join(row["layers"]) if row["layers"] else f"{row['name']} (loss)"
            forward, backward = seconds.get(key, (0.0, 0.0))
            if row["phase"] == "forward":
                forward += row["seconds"]
            else:
                backward += row["seconds"]
            seconds[key] = (forward, backward)
        result, placed = [], set()
        for layer in self.model.layers:
            group = next((key for key in seconds if layer.name in key.split("+")), None)
            key = group or layer.name
            if key in placed:
                continue
            placed.add(key)
            result.append((key, *seconds.get(key, (0.0, 0.0))))
        result.extend((key, *times) for key, times in seconds.items() if key not in placed)
        return result

    # -- totals -----------------------------------------------------------------------------
    def phase_seconds(self):
        """{phase: median seconds per step}."""
        totals = {}
        for phase in PHASES:
            indices = [i for i, info in enumerate(self.infos) if info.phase == phase]
            if indices:
                totals[phase] = float(np.median(self.seconds[:, indices].sum(axis=1)))
        return totals

    def summary(self):
        """Step medians: recorded, plain (without the profiler), the sum of the calls, and the
        overhead of recording in percent of the plain step (None without plain steps)."""
        recorded = float(np.median(self.step_seconds))
        plain = float(np.median(self.plain_seconds)) if len(self.plain_seconds) else None
        calls = float(np.median(self.seconds.sum(axis=1)))
        overhead = 100 * (recorded - plain) / plain if plain else None
        return {"steps": len(self.records), "batch_size": self.batch_size,
                "recorded_step_seconds": recorded, "plain_step_seconds": plain,
                "calls_seconds": calls, "overhead_pct": overhead, **self.peaks}

    def table(self, limit=None):
        """The calls sorted by time (the `limit` slowest if given), the layers in model order,
        and a footer with the step times, the overhead and the peaks."""
        from .table import format_table
        return format_table(self, limit)

    def __str__(self):
        return self.table()

    def save_trace(self, path):
        from .trace import save_trace
        return save_trace(self, path)

    def save_tensorboard(self, log_dir, run=None):
        from .trace import save_tensorboard
        return save_tensorboard(self, log_dir, run)

    def save_chart(self, path):
        from .chart import save_chart
        return save_chart(self, path)
