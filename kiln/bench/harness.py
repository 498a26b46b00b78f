"""The side-by-side harness: kiln and every installed peer, alternating, in one run.

Each framework lives in its own worker process; the harness walks the configurations
`repeats` times and, inside each configuration, asks every framework in turn (rotating the
order), so slow drifts of a shared machine hit everyone alike. Matmul peaks are measured in
this process before and after. Results: a table on stdout and a JSON file. "Best peer" of a
configuration is the fastest of every peer framework, default and best documented
configurations (torch-compile, keras-tensorflow-onednn) alike, and is named.
"""

import json
import os
import subprocess
import sys
import time
from itertools import product

import numpy as np

from ..profiler.table import planned_bytes_line
from . import models
from .peak import bf16_matmul_gflops, sgemm_gflops
from .peers import FRAMEWORKS, installed, is_peer


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


def model_flops(model_names=None):
    """GFLOP per training step and per inference batch of each benchmark model, counted on
    kiln's copy; {"error": why} for a model kiln can not build (its rows then have no GFLOP/s)."""
    flops = {}
    for name in model_names or models.MODELS:
        try:
            model, batch = models.built(name)
            flops[name] = {"train": models.training_flops(model, batch) / 1e9,
                           "infer": models.inference_flops(model, batch) / 1e9}
        except Exception as error:
            flops[name] = {"error": f"kiln can not build it ({type(error).__name__}: {error})"}
    return flops


def summarize(times_by_repeat):
    times = np.concatenate([np.asarray(t) for t in times_by_repeat])
    medians = [float(np.median(t)) for t in times_by_repeat]
    return {"median_ms": float(np.median(times)), "best_ms": float(times.min()),
            "p10_ms": float(np.percentile(times, 10)), "p90_ms": float(np.percentile(times, 90)),
            "repeat_medians_ms": medians, "samples": int(times.size)}


def run(model_names, formats, modes, precisions, frameworks, repeats, steps, warmup,
        json_path, log_path, fit_rounds=5):
    peaks_before = {"f32": sgemm_gflops(), "bf16": bf16_matmul_gflops()}
    status = {fw: installed(fw) for fw in frameworks}
    # a fresh checkout has no results folder yet
    os.makedirs(os.path.dirname(os.path.abspath(log_path)), exist_ok=True)
    log = open(log_path, "w")
    workers = {fw: Worker(fw, log) for fw in frameworks if status[fw] is None}
    # a sequence model has no data format: it is timed once, under the first format asked
    configs = [config for config in product(model_names, modes, formats, precisions)
               if config[0] not in models.SEQUENCE_MODELS or config[2] == formats[0]]
    samples = {}
    notes = {}
    setup_seconds = {}
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
                        if answer.get("setup_s"):  # model building / compiling, first call
                            setup_seconds[key] = answer["setup_s"]
                    else:
                        notes[key] = answer.get("unsupported") or answer.get("error")
            print(f"repeat {repeat + 1}/{repeats} done ({time.time() - started:.0f} s)",
                  file=sys.stderr)
        if "kiln" in workers:  # where kiln's step time goes, call by call
            for model, mode, precision in product(model_names, modes, precisions):
                answer = workers["kiln"].request(what="profile", model=model, mode=mode,
                                                 format=formats[0], precision=precision,
                                                 steps=steps, fit_rounds=fit_rounds)
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
                             warmup=warmup, fit_rounds=fit_rounds), json_path, kiln_details,
                        setup_seconds)


def build_report(samples, notes, status, peaks, peaks_before, peaks_after, settings, json_path,
                 kiln_details, setup_seconds=None):
    flops = model_flops(sorted({key[1] for key in samples}))
    notes = dict(notes)
    for model, counts in flops.items():
        if "error" in counts:
            notes[(model, "GFLOP count")] = counts["error"]
    rows = []
    for key, times in sorted(samples.items()):
        framework, model, mode, data_format, precision = key
        stats = summarize(times)
        work = flops[model].get(mode)
        gflops = None if work is None else work / (stats["median_ms"] / 1e3)
        stats.update(framework=framework, model=model, mode=mode, format=data_format,
                     precision=precision, gflop_per_step=work, gflops=gflops,
                     pct_f32_peak=None if gflops is None else 100 * gflops / peaks["f32"],
                     pct_bf16_peak=100 * gflops / peaks["bf16"]
                     if gflops is not None and peaks["bf16"] else None,
                     setup_s=(setup_seconds or {}).get(key))
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
              "best_peers": best_peers(rows),
              "kiln": kiln_details,
              "machine": {"cpus": os.cpu_count(), "python": sys.version.split()[0]}}
    os.makedirs(os.path.dirname(os.path.abspath(json_path)), exist_ok=True)
    with open(json_path, "w") as f:
        json.dump(report, f, indent=1)
    return report


def best_peers(rows):
    """Per configuration, the fastest peer over every peer framework, default and best
    documented configurations alike: the lowest median and the fastest single step, each named,
    and kiln's median over each."""
    by_config = {}
    for row in rows:
        by_config.setdefault((row["model"], row["mode"], row["format"], row["precision"]),
                             []).append(row)
    best = []
    for (model, mode, data_format, precision), entries in sorted(by_config.items()):
        peers = [row for row in entries if is_peer(row["framework"])]
        if not peers:
            continue
        by_median = min(peers, key=lambda row: row["median_ms"])
        by_step = min(peers, key=lambda row: row["best_ms"])
        kiln = next((row for row in entries if row["framework"] == "kiln"), None)
        kiln_ms = None if kiln is None else kiln["median_ms"]
        best.append({
            "model": model, "mode": mode, "format": data_format, "precision": precision,
            "framework": by_median["framework"], "median_ms": by_median["median_ms"],
            "fastest_step_framework": by_step["framework"], "fastest_step_ms": by_step["best_ms"],
            "kiln_median_ms": kiln_ms,
            "kiln_over_best_peer_median": None if kiln is None
            else kiln_ms / by_median["median_ms"],
            "kiln_over_fastest_peer_step": None if kiln is None
            else kiln_ms / by_step["best_ms"]})
    return best


def _ratio(value):
    return "" if value is None else f"{value:.2f}"


def best_peer_line(entry):
    """One line of the best-peer summary."""
    text = (f"best peer {entry['model']} {entry['mode']} {entry['format']} "
            f"{entry['precision']}: {entry['framework']} median {entry['median_ms']:.1f} ms, "
            f"fastest step {entry['fastest_step_framework']} {entry['fastest_step_ms']:.1f} ms")
    if entry["kiln_median_ms"] is not None:
        text += (f"; kiln {entry['kiln_median_ms']:.1f} ms = "
                 f"{_ratio(entry['kiln_over_best_peer_median'])}x / "
                 f"{_ratio(entry['kiln_over_fastest_peer_step'])}x")
    return text


def format_table(report):
    lines = []
    peaks = report["peaks_gflops"]
    bf16 = f"{peaks['bf16']:.0f}" if peaks["bf16"] else "n/a"
    lines.append(f"matmul peaks (same run): f32 {peaks['f32']:.0f} GFLOP/s, bf16 {bf16} GFLOP/s")
    header = (f"{'model':<18}{'mode':<6}{'format':<15}{'prec':<5}{'framework':<24}"
              f"{'median':>8}{'best':>8}{'p10-p90':>14}{'kiln/med':>9}{'kiln/best':>10}"
              f"{'GFLOP/s':>9}{'%f32':>6}{'%bf16':>6}")
    lines.append(header)
    lines.append("-" * len(header))
    for row in report["results"]:
        ratio_median = row.get("kiln_over_peer_median")
        ratio_best = row.get("kiln_over_peer_best")
        gflops, pct_f32, pct_bf16 = row["gflops"], row["pct_f32_peak"], row["pct_bf16_peak"]
        lines.append(
            f"{row['model']:<18}{row['mode']:<6}{row['format']:<15}{row['precision']:<5}"
            f"{row['framework']:<24}{row['median_ms']:>8.1f}{row['best_ms']:>8.1f}"
            f"{row['p10_ms']:>7.1f}-{row['p90_ms']:<6.1f}"
            f"{_ratio(ratio_median):>9}{_ratio(ratio_best):>10}"
            f"{'n/a' if gflops is None else f'{gflops:.0f}':>9}"
            f"{'' if pct_f32 is None else f'{pct_f32:.1f}':>6}"
            f"{'' if pct_bf16 is None else f'{pct_bf16:.0f}':>6}")
    for entry in report.get("best_peers", []):
        lines.append(best_peer_line(entry))
    for name, detail in report["kiln"].items():
        if isinstance(detail, dict) and "calls_ms" in detail:
            lines.append(f"kiln {name}: {step_efficiency(detail)}")
        elif isinstance(detail, dict):
            lines.append(f"kiln {name}: {detail.get('error') or detail}")
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
        text += "; " + fit_cost_text(detail, step)
    if "planned_bytes" in detail:  # runs recorded before it was reported have none
        text += "; " + planned_bytes_line(detail["planned_bytes"])
    return text


def fit_cost_text(detail, step_ms=None):
    """What fit() adds to the plan's steps (kiln_runner.fit_cost): per step inside fit() (the
    slope between two epoch lengths) and per fit() call (the intercept), beside the plan steps
    run alternately with them. Runs recorded before the slope was measured have only the
    whole fit() call per step."""
    fit, plan = detail["fit_step_ms"], detail.get("fit_plan_step_ms", step_ms)
    over = 100 * (fit - plan) / plan
    if "fit_slope_ms" not in detail:
        return (f"a fit() step {fit:.1f} ms, {over:+.1f}% over plan steps run alternately "
                f"with it ({plan:.1f} ms; batch feeding, callbacks)")
    slope, fixed, steps = detail["fit_slope_ms"], detail["fit_fixed_ms"], detail["fit_steps"][0]
    text = (f"a step inside fit() {slope:.2f} ms, {100 * (slope - plan) / plan:+.1f}% over plan "
            f"steps run alternately with it ({plan:.2f} ms; batch feeding, labels, metrics, "
            f"callbacks), plus {fixed:.1f} ms per fit() call ({100 * fixed / (steps * plan):.1f}% "
            f"of {steps} plan steps); a whole {steps}-step fit() {fit:.2f} ms per step "
            f"({over:+.1f}%)")
    if "fit_own_slope_ms" in detail:  # runs recorded before the no-op step measure have none
        own = detail["fit_own_slope_ms"]
        text += (f"; fit()'s own work with a no-op step {1e3 * own:.0f} us per step "
                 f"({100 * own / plan:.2f}% of a plan step) and "
                 f"{detail['fit_own_fixed_ms']:.1f} ms per call")
    if detail.get("fit_clock", "wall") != "wall":
        text += f" ({detail['fit_clock']} time)"
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
        gflops, pct_f32 = row["gflops"], row["pct_f32_peak"]
        out.append(f"| {row['model']} | {row['mode']} | {row['format']} | {row['precision']} | "
                   f"{row['framework']} | {row['median_ms']:.1f} | {row['best_ms']:.1f} | "
                   f"{row['p10_ms']:.1f}-{row['p90_ms']:.1f} | "
                   f"{_ratio(ratio)} | {_ratio(ratio_best)} | "
                   f"{'n/a' if gflops is None else f'{gflops:.0f}'} | "
                   f"{'n/a' if pct_f32 is None else f'{pct_f32:.1f}'} |")
    if report.get("best_peers"):
        out += ["", "Best peer of each configuration, over every peer framework (defaults and "
                "best documented configurations):", "",
                "| model | mode | format | precision | best peer (median) | median ms "
                "| fastest peer step | ms | kiln median ms | kiln / best peer median "
                "| kiln / fastest peer step |", "|---|---|---|---|---|---|---|---|---|---|---|"]
        for e in report["best_peers"]:
            kiln = "" if e["kiln_median_ms"] is None else f"{e['kiln_median_ms']:.1f}"
            out.append(f"| {e['model']} | {e['mode']} | {e['format']} | {e['precision']} | "
                       f"{e['framework']} | {e['median_ms']:.1f} | "
                       f"{e['fastest_step_framework']} | {e['fastest_step_ms']:.1f} | {kiln} | "
                       f"{_ratio(e['kiln_over_best_peer_median'])} | "
                       f"{_ratio(e['kiln_over_fastest_peer_step'])} |")
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
