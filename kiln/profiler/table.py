"""A profile as text for the terminal: the calls sorted by time, the layers in model order,
the calls added up by kind, and a footer with the step times, the profiler's overhead, the
peaks and the plan's buffer bytes. `kind_lines` and `planned_bytes_line` also print
`kiln bench profile`."""


def _cut(text, width):
    return text if len(text) <= width else text[:width - 1] + "~"


def _call(row):
    """The label without the layer name it starts with (the layer column shows it)."""
    label, name = row["label"], row["name"]
    if label.startswith((name + " ", name + "/")) and row["layers"]:
        return label[len(name) + 1:]
    return label


def call_lines(profile, limit=None):
    step = profile.summary()["calls_seconds"]
    rows = sorted(profile.rows(), key=lambda row: -row["seconds"])
    shown = rows if limit is None else rows[:limit]
    out = [f"{'ms':>8} {'%':>5}  {'phase':<8} {'layer':<24} {'call':<30} "
           f"{'primitive: implementation':<46} {'GFLOP':>7} {'MB':>7} {'rate':>13} "
           f"{'% peak':>7}"]
    for row in shown:
        ms = row["seconds"] * 1e3
        rate, peak = _rate(row)
        kernel = f"{row['primitive']}: {row['implementation']}"
        if row["calls"] > 1:
            kernel += f" x{row['calls']}"
        out.append(f"{ms:8.3f} {100 * row['seconds'] / step:5.1f}  {row['phase']:<8} "
                   f"{_cut(row['name'], 24):<24} {_cut(_call(row), 30):<30} "
                   f"{_cut(kernel, 46):<46} {row['flops'] / 1e9:7.3f} "
                   f"{row['bytes'] / 2**20:7.2f} {rate:>13} {peak:>7}")
    if len(shown) < len(rows):
        rest = sum(row["seconds"] for row in rows[len(shown):]) * 1e3
        out.append(f"{rest:8.3f} {100 * rest / 1e3 / step:5.1f}  "
                   f"({len(rows) - len(shown)} more calls)")
    return out


def layer_lines(profile):
    out = [f"{'layer':<40} {'forward ms':>11} {'backward ms':>12}"]
    for name, forward, backward in profile.layer_rows():
        if forward == 0.0 and backward == 0.0:
            out.append(f"{_cut(name, 40):<40} {'-':>11} {'-':>12}  (no call: a view, or "
                       "nothing to do)")
        else:
            out.append(f"{_cut(name, 40):<40} {forward * 1e3:11.3f} {backward * 1e3:12.3f}")
    return out


def _rate(row, peak_word=""):
    """(rate, % of the same-run peak) columns of a row with kinds.rate()'s keys; the % of the
    sgemm peak followed by `peak_word`, the % of the copy bandwidth by 'bw'."""
    if "gflops" in row:
        return f"{row['gflops']:.1f} GFLOP/s", f"{row['pct_peak']:.1f}{peak_word}"
    if "gbps" in row:
        return f"{row['gbps']:.1f} GB/s", f"{row['pct_bandwidth']:.1f} bw"
    return "", ""


def kind_lines(rows, step_seconds):
    """kinds.by_kind rows as a table: time, % of `step_seconds`, calls and the kind's rate
    against the sgemm peak (compute-bound) or the copy bandwidth (memory-bound)."""
    out = [f"{'kind':<24}{'ms':>9}{'% step':>8}{'calls':>7}{'rate':>15}{'% of':>11}"]
    for row in rows:
        rate, peak = _rate(row, " peak")
        out.append(f"{_cut(row['kind'], 24):<24}{row['seconds'] * 1e3:9.2f}"
                   f"{100 * row['seconds'] / step_seconds:8.1f}{row['calls']:7d}{rate:>15}"
                   f"{peak:>11}")
    return out


def planned_bytes_line(planned_bytes):
    """The plan's buffer bytes (builder.finish): with reuse by liveness, without, scratchpad."""
    return (f"planned buffers {planned_bytes['buffers'] / 2**20:.1f} MiB (without reuse by "
            f"liveness {planned_bytes['buffers_without_reuse'] / 2**20:.1f} MiB; scratchpad "
            f"{planned_bytes['scratchpad'] / 2**20:.2f} MiB)")


def footer_lines(profile):
    s = profile.summary()
    phases = ", ".join(f"{phase} {seconds * 1e3:.2f} ms"
                       for phase, seconds in profile.phase_seconds().items())
    out = [f"{s['steps']} recorded steps of batch {s['batch_size']} (medians): {phases}; the "
           f"calls add up to {s['calls_seconds'] * 1e3:.2f} ms of a "
           f"{s['recorded_step_seconds'] * 1e3:.2f} ms recorded step"]
    if s["plain_step_seconds"] is not None:
        out.append(f"profiler overhead: {s['overhead_pct']:+.1f}% (recorded step "
                   f"{s['recorded_step_seconds'] * 1e3:.2f} ms against "
                   f"{s['plain_step_seconds'] * 1e3:.2f} ms for the plain steps run in turn)")
    else:
        out.append("profiler overhead: not measured (no plain step ran in turn)")
    out.append(f"peaks of this run: sgemm {s['matmul_gflops']:.1f} GFLOP/s, copy "
               f"{s['copy_gbps']:.1f} GB/s ('% peak' of compute-bound calls: convolutions, "
               "inner products; 'bw' of memory-bound ones: depthwise convolutions and the rest)")
    if profile.planned_bytes:
        out.append(planned_bytes_line(profile.planned_bytes))
    return out


def format_table(profile, limit=None):
    return "\n".join(["calls, slowest first:", *call_lines(profile, limit), "",
                      "layers, forward and backward:", *layer_lines(profile), "",
                      "by kind of call:",
                      *kind_lines(profile.kind_rows(), profile.summary()["calls_seconds"]),
                      "", *footer_lines(profile)])
