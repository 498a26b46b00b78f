"""The side-by-side harness: kiln and every installed peer, alternating, in one run.

Each framework lives in its own worker process; the harness walks the configurations
`repeats` times and, inside each configuration, asks every framework in turn (rotating the
order), so slow drifts of a shared machine hit everyone alike. Matmul peaks are measured in
this process before and after. Results: a table on stdout and a JSON file.
"""

import json
import os
import subprocess
import sys
import time
from itertools import product

import numpy as np

from . import models
from .peak import bf16_matmul_gflops, sgemm_gflops
from .peers import FRAMEWORKS, installed


class Worker:
    def __init__(self, framework, log):
        self.framework = framework
        self.process = subprocess.Popen(
            [sys.executable, "-m", "kiln.bench.worker", framework], stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, stderr=log, text=True, bufsize=1)

    def request(self, **request):
        self.process.stdin.write(json.dumps(request) + "\n")
        line = self.process.stdout.readline()
        if not line:
            return {"error": "worker exited (see the log)"}
        return json.loads(line)

    def close(self):
        self.process.stdin.close()
        self.process.wait(timeout=60)


def model_flops():
    """GFLOP per training step and per inference batch of each benchmark model."""
    flops = {}
    for name, build in models.MODELS.items():
        model, _, batch = build("channels_last")
        model.build()
        flops[name] = {"train": models.training_flops(model, batch) / 1e9,
                       "infer": models.inference_flops(model, batch) / 1e9}
    return flops


def summarize(times_by_repeat):
    times = np.concatenate([np.asarray(t) for t in times_by_repeat])
    medians = [float(np.median(t)) for t in times_by_repeat]
    return {"median_ms": float(np.median(times)), "best_ms": float(times.min()),
            "p10_ms": float(np.percentile(times, 10)), "p90_ms": float(np.percentile(times, 90)),
            "repeat_medians_ms": medians, "samples": int(times.size)}


def run(model_names, formats, modes, precisions, frameworks, repeats, steps, warmup,
        json_path, log_path):
    peaks_before = {"f32": sgemm_gflops(), "bf16": bf16_matmul_gflops()}
    status = {fw: installed(fw) for fw in frameworks}
    log = open(log_path, "w")
    workers = {fw: Worker(fw, log) for fw in frameworks if status[fw] is None}
    configs = list(product(model_names, modes, formats, precisions))
    samples = {}
    notes = {}
    started = time.time()
    kiln_details = {}
    try:
        if "kiln" in workers:  # first, while the worker is new: fit() start-up cost
            for model in model_names:
                kiln_details[f"{model} seconds to first fit step"] = workers["kiln"].request(
                    what="first_step", model=model, format=formats[0], mode="train",
                    precision="f32").get("seconds")
        for repeat in range(repeats):
            for config in configs:
                order = list(workers)
                order = order[repeat % len(order):] + order[:repeat % len(order)]
                for framework in order:
                    model, mode, data_format, precision = config
                    answer = workers[framework].request(
                        model=model, mode=mode, format=data_format, precision=precision,
                        steps=steps, warmup=warmup)
                    key = (framework, *config)
                    if "times_ms" in answer:
                        samples.setdefault(key, []).append(answer["times_ms"])
                    else:
                        notes[key] = answer.get("unsupported") or answer.get("error")
            print(f"repeat {repeat + 1}/{repeats} done ({time.time() - started:.0f} s)",
                  file=sys.stderr)
        if "kiln" in workers:  # where kiln's step time goes, call by call
            for model, mode, precision in product(model_names, modes, precisions):
                answer = workers["kiln"].request(what="profile", model=model, mode=mode,
                                                 format=formats[0], precision=precision,
                                                 steps=steps)
                kiln_details[f"{model} {mode} {precision} profile"] = answer
    finally:
        for worker in workers.values():
            worker.close()
        log.close()
    peaks_after = {"f32": sgemm_gflops(), "bf16": bf16_matmul_gflops()}
    peaks = {k: max(v for v in (peaks_before[k], peaks_after[k]) if v is not None)
             if peaks_before[k] or peaks_after[k] else None for k in peaks_before}
    return build_report(samples, notes, status, peaks, peaks_before, peaks_after,
                        dict(models=model_names, formats=formats, modes=modes,
                             precisions=precisions, repeats=repeats, steps=steps,
                             warmup=warmup), json_path, kiln_details)


def build_report(samples, notes, status, peaks, peaks_before, peaks_after, settings, json_path,
                 kiln_details):
    flops = model_flops()
    rows = []
    for key, times in sorted(samples.items()):
        framework, model, mode, data_format, precision = key
        stats = summarize(times)
        gflops = flops[model][mode] / (stats["median_ms"] / 1e3)
        stats.update(framework=framework, model=model, mode=mode, format=data_format,
                     precision=precision, gflop_per_step=flops[model][mode], gflops=gflops,
                     pct_f32_peak=100 * gflops / peaks["f32"],
                     pct_bf16_peak=100 * gflops / peaks["bf16"] if peaks["bf16"] else None)
        rows.append(stats)
    by_config = {}
    for row in rows:
        by_config.setdefault((row["model"], row["mode"], row["format"], row["precision"]),
                             {})[row["framework"]] = row
    for entries in by_config.values():
        kiln = entries.get("kiln")
        for row in entries.values():
            if kiln is not None and row["framework"] != "kiln":
                row["kiln_over_peer_median"] = kiln["median_ms"] / row["median_ms"]
                row["kiln_over_peer_best"] = kiln["median_ms"] / row["best_ms"]
    report = {"settings": settings, "peaks_gflops": peaks, "peaks_before": peaks_before,
              "peaks_after": peaks_after, "frameworks": status,
              "notes": {" ".join(k): v for k, v in notes.items()}, "results": rows,
              "kiln": kiln_details,
              "machine": {"cpus": os.cpu_count(), "python": sys.version.split()[0]}}
    os.makedirs(os.path.dirname(os.path.abspath(json_path)), exist_ok=True)
    with open(json_path, "w") as f:
        json.dump(report, f, indent=1)
    return report


def format_table(report):
    lines = []
    peaks = report["peaks_gflops"]
    bf16 = f"{peaks['bf16']:.0f}" if peaks["bf16"] else "n/a"
    lines.append(f"matmul peaks (same run): f32 {peaks['f32']:.0f} GFLOP/s, bf16 {bf16} GFLOP/s")
    header = (f"{'model':<12}{'mode':<6}{'format':<15}{'prec':<5}{'framework':<17}"
              f"{'median':>8}{'best':>8}{'p10-p90':>14}{'kiln/med':>9}{'kiln/best':>10}"
              f"{'GFLOP/s':>9}{'%f32':>6}{'%bf16':>6}")
    lines.append(header)
    lines.append("-" * len(header))
    for row in report["results"]:
        ratio_median = row.get("kiln_over_peer_median")
        ratio_best = row.get("kiln_over_peer_best")
        pct_bf16 = row["pct_bf16_peak"]
        lines.append(
            f"{row['model']:<12}{row['mode']:<6}{row['format']:<15}{row['precision']:<5}"
            f"{row['framework']:<17}{row['median_ms']:>8.1f}{row['best_ms']:>8.1f}"
            f"{row['p10_ms']:>7.1f}-{row['p90_ms']:<6.1f}"
            f"{'' if ratio_median is None else f'{ratio_median:.2f}':>9}"
            f"{'' if ratio_best is None else f'{ratio_best:.2f}':>10}"
            f"{row['gflops']:>9.0f}{row['pct_f32_peak']:>6.1f}"
            f"{'' if pct_bf16 is None else f'{pct_bf16:.0f}':>6}")
    for name, detail in report["kiln"].items():
        if isinstance(detail, dict) and "calls_ms" in detail:
            lines.append(f"kiln {name}: {step_efficiency(detail)}")
        elif detail is not None:
            lines.append(f"kiln {name}: {detail:.2f}")
    for framework, reason in report["frameworks"].items():
        if reason:
            lines.append(f"{framework}: {reason}")
    for key, reason in report["notes"].items():
        lines.append(f"{key}: {reason}")
    return "\n".join(lines)


__all__ = ["run", "format_table", "FRAMEWORKS"]


def step_efficiency(detail):
    """One line on what a step spends outside oneDNN primitives and kiln's kernels."""
    step = detail["step_ms"]
    loop = detail["calls_ms"].get("outside calls", 0.0)
    text = (f"plan step {step:.1f} ms, of which between calls (Python, dispatch) "
            f"{loop:.3f} ms ({100 * loop / step:.1f}%)")
    if "fit_step_ms" in detail:
        fit, plan = detail["fit_step_ms"], detail.get("fit_plan_step_ms", step)
        text += (f"; a fit() step {fit:.1f} ms, {100 * (fit - plan) / plan:+.1f}% over plan "
                 f"steps run alternately with it ({plan:.1f} ms; batch feeding, callbacks)")
    return text


def layer_breakdown(calls_ms):
    """Per-call medians grouped by layer and pass: {layer: {"forward": ms, "backward": ms}}."""
    layers = {}
    for label, ms in calls_ms.items():
        if label in ("outside calls", "optimizer update"):
            layers.setdefault(label, {})["step"] = ms
            continue
        layer = label.split()[0].split("/")[0]
        phase = "backward" if ("backward" in label or "gradient" in label) else "forward"
        entry = layers.setdefault(layer, {})
        entry[phase] = entry.get(phase, 0.0) + ms
    return layers


def markdown(report):
    """The report as Markdown: the side-by-side table and kiln's time per layer."""
    peaks = report["peaks_gflops"]
    out = [f"Matmul peaks measured in the same run: f32 sgemm {peaks['f32']:.0f} GFLOP/s, "
           f"bf16 matmul {peaks['bf16'] or 0:.0f} GFLOP/s.", "",
           "| model | mode | format | precision | framework | median ms | best ms | p10-p90 ms "
           "| kiln / peer median | kiln / peer best | GFLOP/s | % f32 peak |",
           "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for row in sorted(report["results"], key=lambda r: (r["model"], r["mode"], r["precision"],
                                                         r["format"], r["framework"])):
        ratio = row.get("kiln_over_peer_median")
        ratio_best = row.get("kiln_over_peer_best")
        out.append(f"| {row['model']} | {row['mode']} | {row['format']} | {row['precision']} | "
                   f"{row['framework']} | {row['median_ms']:.1f} | {row['best_ms']:.1f} | "
                   f"{row['p10_ms']:.1f}-{row['p90_ms']:.1f} | "
                   f"{'' if ratio is None else f'{ratio:.2f}'} | "
                   f"{'' if ratio_best is None else f'{ratio_best:.2f}'} | "
                   f"{row['gflops']:.0f} | {row['pct_f32_peak']:.1f} |")
    for name, detail in report["kiln"].items():
        if not (isinstance(detail, dict) and "calls_ms" in detail):
            continue
        out += ["", f"kiln {name} (channels_last): {step_efficiency(detail)}", "",
                "| layer | forward ms | backward ms |", "|---|---|---|"]
        breakdown = layer_breakdown(detail["calls_ms"])
        for layer, phases in sorted(breakdown.items(), key=lambda kv: -sum(kv[1].values())):
            if "step" in phases:
                out.append(f"| {layer} | {phases['step']:.2f} (whole step) | |")
            else:
                out.append(f"| {layer} | {phases.get('forward', 0):.2f} | "
                           f"{phases.get('backward', 0):.2f} |")
    return "\n".join(out)
