"""Data-parallel scaling: a model's fit on 1 and on N MPI ranks of this machine.

    python -m kiln.bench scaling --models mnist_cnn resnet20 --ranks 1 2 --steps 10

Each configuration runs under the environment's mpiexec (`python -m kiln.bench.scaling
worker ...` on every rank, cores / ranks threads each). A worker fits the model on synthetic
data with keras.distribution.DataParallel() and reports, from rank 0:
- images/s over the timed steps (global batch / median step time),
- the gradient allreduce per step (GradientBuckets' own clock, after a timed Barrier: the
  wait for the slower rank is reported apart), and how much of it is hidden behind backward
  (none: the blocking path is the one kiln runs),
- the same bytes through a plain mpi4py Allreduce (median of 20, after a barrier), and the
  bandwidth both achieve: bytes / time, and as a ring's bus bandwidth 2(p-1)/p * bytes / time;
- whether overlap would pay: an Iallreduce of the same bytes started before a whole training
  step and waited for after it, against the two apart (overlap_probe).
"""

import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np

from ..launch import find_mpiexec

MARK = "SCALING "
# one link hop of MPI over TCP on commodity Ethernet (RDMA networks: a few microseconds)
LINK_LATENCY = 25e-6


def worker(model_name, steps, warmup):
    from .. import keras
    from ..distributed.collective import GradientBuckets
    from ..keras.callbacks import Callback
    from ..keras.distribution.data_parallel_loop import active_world
    from . import models

    keras.distribution.set_distribution(keras.distribution.DataParallel())
    keras.utils.set_random_seed(0)
    model, shape, batch = getattr(models, model_name)("channels_last")
    rng = np.random.default_rng(0)
    x = rng.random(((steps + warmup) * batch, *shape), dtype=np.float32)
    y = np.eye(10, dtype=np.float32)[rng.integers(0, 10, len(x))]

    class StepClock(Callback):
        def __init__(self):
            super().__init__()
            self.times = []

        def on_train_batch_begin(self, batch, logs=None):
            self.start = time.perf_counter()

        def on_train_batch_end(self, batch, logs=None):
            self.times.append(time.perf_counter() - self.start)

    model.fit(x[:warmup * batch], y[:warmup * batch], batch_size=batch, epochs=1, verbose=0,
              shuffle=False)  # plans, kernels, first-touch of the buffers
    world = active_world()
    if world is not None:
        world.allreduce_seconds, world.allreduce_calls, world.wait_seconds = 0.0, 0, 0.0
        GradientBuckets.measure_wait = True
    clock = StepClock()
    model.fit(x[warmup * batch:], y[warmup * batch:], batch_size=batch, epochs=1, verbose=0,
              shuffle=False, callbacks=[clock])
    step = float(np.median(clock.times))
    report = {"model": model_name, "ranks": 1 if world is None else world.size,
              "threads_per_rank": int(os.environ.get("OMP_NUM_THREADS", "0")),
              "global_batch": batch, "steps": steps, "step_ms": step * 1e3,
              "images_per_s": batch / step}
    if world is not None:
        floats = model.store.trainable_size
        report["allreduce_ms_per_step"] = world.allreduce_seconds / world.allreduce_calls * 1e3
        report["wait_ms_per_step"] = world.wait_seconds / world.allreduce_calls * 1e3
        report["allreduce_hidden_pct"] = 0.0  # blocking Allreduce after backward: none hidden
        report.update(overlap_probe(world, model, batch // world.size, floats))
        report["gradient_mb"] = floats * 4 / 1e6
        buffer = np.ones(floats, dtype=np.float32)
        times = []
        for _ in range(20):
            world.barrier()
            start = time.perf_counter()
            world.sum_in_place(buffer)
            times.append(time.perf_counter() - start)
        plain = float(np.median(times))
        ring = 2 * (world.size - 1) / world.size
        report["plain_allreduce_ms"] = plain * 1e3
        for name, seconds in (("kiln", report["allreduce_ms_per_step"] / 1e3),
                              ("plain", plain)):
            report[f"{name}_algorithm_gb_per_s"] = floats * 4 / seconds / 1e9
            report[f"{name}_bus_gb_per_s"] = ring * floats * 4 / seconds / 1e9
    if world is None or world.rank == 0:
        print(MARK + json.dumps(report), flush=True)


def overlap_probe(world, model, local_batch, floats, repeats=5):
    """Whether an Iallreduce of the gradient bytes started before a training step would be
    hidden by it: median (step alone), (Allreduce alone), (Iallreduce started, step, Wait),
    all after a Barrier. Hidden = (step + allreduce - overlapped) / allreduce. (The step
    updates the weights without a gradient sum: the model is not used afterwards.)"""
    plan = model._plans[(True, local_batch)]
    plan.gradient_reducer = None
    buffer = np.ones(floats, dtype=np.float32)
    samples = {"step": [], "allreduce": [], "overlapped": []}
    for _ in range(repeats):
        for name in samples:
            world.barrier()
            start = time.perf_counter()
            if name == "allreduce":
                world.sum_in_place(buffer)
            elif name == "step":
                plan.train_step()
            else:
                request = world.start_sum(buffer)
                plan.train_step()
                request.Wait()
            samples[name].append(time.perf_counter() - start)
    step, reduce, both = (float(np.median(samples[name])) for name in samples)
    return {"probe_step_ms": step * 1e3, "probe_allreduce_ms": reduce * 1e3,
            "probe_overlapped_ms": both * 1e3,
            "iallreduce_hidden_pct": max(0.0, min(100.0, 100 * (step + reduce - both) / reduce))}


def run(models, ranks, steps, warmup, threads=None, timeout=900):
    results = []
    cores = os.cpu_count() or 1
    for model_name in models:
        for count in ranks:
            env = {**os.environ, "OMP_NUM_THREADS": str(threads or max(1, cores // count)),
                   "HYDRA_IFACE": os.environ.get("HYDRA_IFACE", "lo")}
            env["NUMBA_NUM_THREADS"] = env["OMP_NUM_THREADS"]
            line = [find_mpiexec(), "-n", str(count), sys.executable, "-m", "mpi4py", "-m",
                    "kiln.bench.scaling", "worker", model_name, str(steps), str(warmup)]
            done = subprocess.run(line, env=env, capture_output=True, text=True,
                                  timeout=timeout)
            found = [json.loads(text[len(MARK):]) for text in done.stdout.splitlines()
                     if text.startswith(MARK)]
            if done.returncode != 0 or not found:
                raise RuntimeError(f"scaling: {model_name} on {count} ranks failed:\n"
                                   f"{done.stdout[-2000:]}{done.stderr[-2000:]}")
            results.append(found[0])
            print(describe(found[0]), flush=True)
    return results


def describe(row):
    text = (f"{row['model']:10s} ranks {row['ranks']} x {row['threads_per_rank']} threads: "
            f"{row['images_per_s']:7.1f} images/s, step {row['step_ms']:7.1f} ms")
    if "allreduce_ms_per_step" in row:
        text += (f", allreduce {row['allreduce_ms_per_step']:.2f} ms/step of "
                 f"{row['gradient_mb']:.2f} MB after {row['wait_ms_per_step']:.1f} ms waiting "
                 f"for the other rank ({row['allreduce_hidden_pct']:.0f}% hidden, "
                 f"bus {row['kiln_bus_gb_per_s']:.2f} GB/s) vs plain mpi4py Allreduce "
                 f"{row['plain_allreduce_ms']:.2f} ms (bus {row['plain_bus_gb_per_s']:.2f} "
                 f"GB/s); Iallreduce started before a step: {row['iallreduce_hidden_pct']:.0f}% "
                 f"hidden (step {row['probe_step_ms']:.1f} ms + allreduce "
                 f"{row['probe_allreduce_ms']:.2f} ms -> {row['probe_overlapped_ms']:.1f} ms)")
    return text


def ring_allreduce_seconds(nbytes, nodes, gbit_per_s, latency_s=LINK_LATENCY):
    """A ring allreduce: 2(p-1)/p of the bytes over each link, in 2(p-1) latency-bound
    steps (reduce-scatter then allgather)."""
    if nodes == 1:
        return 0.0
    return (2 * (nodes - 1) / nodes * nbytes / (gbit_per_s * 1e9 / 8)
            + 2 * (nodes - 1) * latency_s)


def scaling_model(rows, nodes=(8, 16, 64), links=(10, 100)):
    """Markdown rows of the projected scaling for nodes like this machine: the node's compute
    time per image is the best of the measured runs (step minus the allreduce, over the global
    batch), the gradient bytes those of the measured model. `stops scaling below` is the
    per-node batch at which the allreduce takes as long as the compute (50% efficiency)."""
    lines = ["| model | gradient MB | nodes | link Gbit/s | allreduce ms | per-node batch "
             "128: efficiency | stops scaling below (per node / global batch) |",
             "|---|---|---|---|---|---|---|"]
    per_image = {}
    for row in rows:
        seconds = (row["step_ms"] - row.get("allreduce_ms_per_step", 0.0)) / 1e3
        per_image[row["model"]] = min(per_image.get(row["model"], np.inf),
                                      seconds / row["global_batch"])
    sizes = {row["model"]: row["gradient_mb"] for row in rows if "gradient_mb" in row}
    for model in sizes:
        nbytes = sizes[model] * 1e6
        for count in nodes:
            for link in links:
                reduce = ring_allreduce_seconds(nbytes, count, link)
                compute = per_image[model] * 128
                smallest = reduce / per_image[model]
                lines.append(f"| {model} | {sizes[model]:.2f} | {count} | {link} | "
                             f"{reduce * 1e3:.2f} | {100 * compute / (compute + reduce):.1f}% | "
                             f"{smallest:.1f} / {smallest * count:.0f} |")
    return lines


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m kiln.bench scaling")
    parser.add_argument("--models", nargs="+", default=["mnist_cnn", "resnet20"])
    parser.add_argument("--ranks", nargs="+", type=int, default=[1, 2])
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--threads", type=int, default=None,
                        help="threads per rank (default: cores / ranks)")
    parser.add_argument("--json", default=None, help="write the rows to this file")
    args = parser.parse_args(argv)
    results = run(args.models, args.ranks, args.steps, args.warmup, args.threads)
    print("\n".join(scaling_model(results)))
    if args.json:
        with open(args.json, "w") as file:
            json.dump({"cpu_count": os.cpu_count(), "rows": results}, file, indent=1)
    return 0


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "worker":
        worker(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
    else:
        sys.exit(main())
