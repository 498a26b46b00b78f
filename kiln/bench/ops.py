"""`kiln bench ops`: one broadcasting op at memory bandwidth, kiln beside the peers.

    python -m kiln.bench ops --repeats 5 --steps 20 --json bench-results/ops.json

Times broadcast_add of a (C,) bias onto a 128x64x24x24 float32 activation (peers/ops_shapes.py),
forward (y = x + b) and backward (dx = dy, db = dy summed over N, H, W), in channels_last
and channels_first, in kiln and in every installed peer (PyTorch eager and compiled,
TensorFlow with and without its oneDNN kernels, JAX under jit), each in its own worker
process (worker.py with the peers/ops_*.py runners), alternating as the model harness does.

Bandwidth: the forward must read x and write y (2 x 18.9 MB), the backward must read dy once
(18.9 MB: the input gradient is dy itself, which needs no bytes moved); GB/s is those bytes
over the median time, and "% copy" compares it with the copy bandwidth (bytes read + written
per second) of the same 18.9 MB, measured in this run before and after the workers: the
faster of a oneDNN reorder on all threads and numpy's copyto on one. Last, in this process,
the bias gradient's sum by oneDNN's reduction primitive against kiln's numba kernel
(ops_reduction.py: why kiln uses the latter).
"""

import json
import os
import subprocess
import sys
import time

import numpy as np

from . import ops_reduction
from .harness import Worker, summarize
from .peak import copy_gbps
from .peers import installed
from .peers import ops_shapes as case

# shown name -> (the worker's framework: environment and prepare() options, runner module)
PEERS = {
    "kiln": ("kiln", "kiln.bench.peers.ops_kiln"),
    "torch": ("torch", "kiln.bench.peers.ops_torch"),
    "torch-compile": ("torch-compile", "kiln.bench.peers.ops_torch"),
    "tensorflow": ("keras-tensorflow", "kiln.bench.peers.ops_tensorflow"),
    "tensorflow-onednn": ("keras-tensorflow-onednn", "kiln.bench.peers.ops_tensorflow"),
    "jax": ("keras-jax", "kiln.bench.peers.ops_jax"),
}
FORMATS = ("channels_last", "channels_first")


class OpsWorker(Worker):
    """A worker process running one framework with an op runner instead of the models'."""

    def __init__(self, framework, runner, log):
        self.framework = framework
        self.process = subprocess.Popen(
            [sys.executable, "-m", "kiln.bench.worker", framework, runner],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log, text=True, bufsize=1)


def copy_bandwidth(repeats=10):
    """GB/s (read + written) of the best copy of the case's bytes: {reorder, copyto, best}."""
    megabytes = case.activation_bytes() / 2**20
    source = np.ones(case.activation_bytes() // 4, np.float32)
    target = np.empty_like(source)
    times = []
    for _ in range(repeats + 1):
        start = time.perf_counter()
        np.copyto(target, source)
        times.append(time.perf_counter() - start)
    numpy_gbps = 2 * source.nbytes / min(times[1:]) / 1e9
    reorder_gbps = copy_gbps(megabytes=int(round(megabytes)), repeats=repeats)
    return {"onednn_reorder": reorder_gbps, "numpy_copyto": numpy_gbps,
            "best": max(reorder_gbps, numpy_gbps)}


def bytes_moved(direction):
    return (2 if direction == "forward" else 1) * case.activation_bytes()


def run(frameworks, repeats, steps, warmup, json_path, log_path):
    copies = [copy_bandwidth()]
    status = {name: installed(PEERS[name][0]) for name in frameworks}
    os.makedirs(os.path.dirname(log_path) or ".", exist_ok=True)
    samples, notes = {}, {}
    with open(log_path, "w") as log:
        workers = {name: OpsWorker(*PEERS[name], log) for name in frameworks
                   if status[name] is None}
        try:
            for repeat in range(repeats):
                for data_format in FORMATS:
                    for direction in case.DIRECTIONS:
                        order = list(workers)
                        order = order[repeat % len(order):] + order[:repeat % len(order)]
                        for name in order:
                            answer = workers[name].request(
                                model=case.CASE, format=data_format, mode=direction,
                                precision="f32", steps=steps, warmup=warmup)
                            key = (name, data_format, direction)
                            if "times_ms" in answer:
                                samples.setdefault(key, []).append(answer["times_ms"])
                            else:
                                notes[key] = answer.get("unsupported") or answer.get("error")
                print(f"repeat {repeat + 1}/{repeats} done", file=sys.stderr)
        finally:
            for worker in workers.values():
                worker.close()
    copies.append(copy_bandwidth())
    reductions = ops_reduction.compare() if "kiln" in frameworks else []
    copy = max(c["best"] for c in copies)
    rows = []
    for data_format in FORMATS:
        for direction in case.DIRECTIONS:
            for name in frameworks:
                key = (name, data_format, direction)
                row = {"framework": name, "format": data_format, "direction": direction}
                if key in samples:
                    stats = summarize(samples[key])
                    gbps = bytes_moved(direction) / stats["median_ms"] / 1e6
                    row.update(stats, gbps=gbps, pct_of_copy=100 * gbps / copy)
                else:
                    row["note"] = status.get(name) or notes.get(key, "no samples")
                rows.append(row)
    from .peers.ops_kiln import describe
    report = {"case": f"{case.CASE} of a ({case.C},) bias onto {case.N}x{case.C}x{case.H}x"
                      f"{case.W} float32",
              "bytes": {d: bytes_moved(d) for d in case.DIRECTIONS},
              "copy_gbps": copy, "copy_runs": copies, "rows": rows,
              "kiln_plan": {f: describe(f) for f in FORMATS},
              "bias_gradient_choice": reductions,
              "settings": dict(repeats=repeats, steps=steps, warmup=warmup)}
    os.makedirs(os.path.dirname(json_path) or ".", exist_ok=True)
    with open(json_path, "w") as f:
        json.dump(report, f, indent=1)
    return report


def format_table(report):
    lines = [f"{report['case']}; copy bandwidth {report['copy_gbps']:.1f} GB/s (best of a "
             "oneDNN reorder and numpy copyto of the same bytes, this run)",
             f"{'format':15} {'direction':9} {'framework':18} {'median ms':>9} "
             f"{'GB/s':>6} {'% copy':>6}  vs fastest peer"]
    for data_format in FORMATS:
        for direction in case.DIRECTIONS:
            rows = [r for r in report["rows"]
                    if r["format"] == data_format and r["direction"] == direction]
            peers = [r["median_ms"] for r in rows if r["framework"] != "kiln"
                     and "median_ms" in r]
            fastest = min(peers) if peers else None
            for r in rows:
                if "median_ms" not in r:
                    lines.append(f"{data_format:15} {direction:9} {r['framework']:18} "
                                 f"skipped: {r['note']}")
                    continue
                versus = f"{fastest / r['median_ms']:.2f}x" if fastest else ""
                lines.append(f"{data_format:15} {direction:9} {r['framework']:18} "
                             f"{r['median_ms']:9.2f} {r['gbps']:6.1f} "
                             f"{r['pct_of_copy']:6.0f}  {versus}")
    for data_format, plan in report["kiln_plan"].items():
        lines.append(f"kiln {data_format}: forward {plan['forward']}; backward "
                     f"{plan['backward']}; input gradient: {plan['input_gradient']}")
    lines.extend(ops_reduction.lines(report.get("bias_gradient_choice", [])))
    return "\n".join(lines)


def command(args):
    report = run(args.frameworks, args.repeats, args.steps, args.warmup, args.json, args.log)
    print(format_table(report))
    print(f"JSON: {args.json}")
    return 0


def add_parser(sub):
    parser = sub.add_parser("ops", help="broadcast_add forward / backward at memory bandwidth, "
                                        "kiln beside the installed peers")
    parser.add_argument("--frameworks", nargs="+", choices=list(PEERS), default=list(PEERS))
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--json", default="bench-results/ops.json")
    parser.add_argument("--log", default="bench-results/ops-workers.log")
    return parser
