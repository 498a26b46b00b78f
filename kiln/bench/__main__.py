"""`python -m kiln.bench train --model mnist_cnn --format channels_last --steps 50`

Times kiln training steps on synthetic data after warm-up and, in the same run, the machine's
sgemm peak. The last line is machine-readable:
    ms_per_step=<median> pct_of_peak=<step GFLOP/s / sgemm GFLOP/s * 100>
"""

import argparse
import sys
import time

import numpy as np

from .models import MODELS, training_flops
from .peak import sgemm_gflops


def time_training(model_name, data_format, steps, warmup):
    model, shape, batch = MODELS[model_name](data_format)
    rng = np.random.default_rng(0)
    x = rng.random((batch, *shape), dtype=np.float32)
    y = np.eye(10, dtype=np.float32)[rng.integers(0, 10, batch)]
    model.build()
    plan = model._plan(True, batch)
    plan.inputs[...] = x
    plan.labels[...] = y
    for _ in range(warmup):
        plan.train_step()
    times = []
    for _ in range(steps):
        start = time.perf_counter()
        plan.train_step()
        times.append(time.perf_counter() - start)
    return np.array(times) * 1e3, training_flops(model, batch)


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m kiln.bench")
    sub = parser.add_subparsers(dest="command", required=True)
    train = sub.add_parser("train", help="median ms per training step and % of sgemm peak")
    train.add_argument("--model", choices=sorted(MODELS), default="mnist_cnn")
    train.add_argument("--format", choices=["channels_last", "channels_first"],
                       default="channels_last")
    train.add_argument("--steps", type=int, default=50)
    train.add_argument("--warmup", type=int, default=5)
    args = parser.parse_args(argv)

    peak_before = sgemm_gflops()
    times, flops = time_training(args.model, args.format, args.steps, args.warmup)
    peak_after = sgemm_gflops()
    peak = max(peak_before, peak_after)
    median = float(np.median(times))
    step_gflops = flops / median / 1e6
    print(f"model={args.model} format={args.format} steps={args.steps} "
          f"gflop_per_step={flops / 1e9:.3f}")
    print(f"step ms: median {median:.2f} best {times.min():.2f} "
          f"p90 {np.percentile(times, 90):.2f}")
    print(f"sgemm peak GFLOP/s: {peak:.1f} (before {peak_before:.1f}, after {peak_after:.1f}); "
          f"step GFLOP/s: {step_gflops:.1f}")
    print(f"ms_per_step={median:.2f} pct_of_peak={100.0 * step_gflops / peak:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
