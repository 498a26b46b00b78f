"""kiln's benchmark harness.

    python -m kiln.bench                  # kiln and every installed peer, side by side
    python -m kiln.bench compare --models mnist_cnn --repeats 3 --json bench-results/run.json
    python -m kiln.bench train --model mnist_cnn --format channels_last --steps 50
    python -m kiln.bench profile --model mnist_cnn          # where a kiln step's time goes,
                                                            # and what fit() adds to it
    python -m kiln.bench report bench-results/run.json      # a compare run as Markdown
    python -m kiln.bench scaling --models mnist_cnn resnet20 --ranks 1 2   # over MPI ranks
    python -m kiln.bench ops                # broadcast_add at memory bandwidth, beside peers
    python -m kiln.bench custom-layer       # a keras.ops scale-and-bias layer vs built-ins
    python -m kiln.bench soak --epochs 100  # fit killed and resumed at random: RSS, checkpoints
    python -m kiln.bench augmentation       # an epoch with augmentation vs one without
    python -m kiln.bench time-to-accuracy   # mnist_cnn on real MNIST to 99%, beside peers

`train` times kiln training steps on synthetic data after warm-up and, in the same run, the
sgemm peak; its last line is `ms_per_step=<median> pct_of_peak=<percent>`.
"""

import argparse
import sys
import time

import numpy as np

from ..profiler import measure_peaks
from . import custom_layer, harness, profile_report, soak, time_to_accuracy
from . import ops as ops_bench
from .models import MODELS, built, training_flops
from .peak import sgemm_gflops
from .peers import FRAMEWORKS

FORMATS = ["channels_last", "channels_first"]


def _prepared_plan(model_name, data_format, training=True, precision="f32"):
    from .peers import kiln_runner
    step = kiln_runner.prepare(model_name, data_format, "train" if training else "infer",
                               precision)
    if isinstance(step, str):  # the reason this precision cannot run here
        raise SystemExit(f"{model_name} {precision}: {step}")
    return step.__self__  # the StepPlan whose bound method was returned


def command_train(args):
    peak_before = sgemm_gflops()
    plan = _prepared_plan(args.model, args.format)
    for _ in range(args.warmup):
        plan.train_step()
    times = []
    for _ in range(args.steps):
        start = time.perf_counter()
        plan.train_step()
        times.append((time.perf_counter() - start) * 1e3)
    peak = max(peak_before, sgemm_gflops())
    model, batch = built(args.model, args.format)
    flops = training_flops(model, batch)
    times = np.array(times)
    median = float(np.median(times))
    step_gflops = flops / median / 1e6
    print(f"model={args.model} format={args.format} steps={args.steps} "
          f"gflop_per_step={flops / 1e9:.3f}")
    print(f"step ms: median {median:.2f} best {times.min():.2f} "
          f"p90 {np.percentile(times, 90):.2f}")
    print(f"sgemm peak GFLOP/s: {peak:.1f}; step GFLOP/s: {step_gflops:.1f}")
    print(f"ms_per_step={median:.2f} pct_of_peak={100.0 * step_gflops / peak:.1f}")
    return 0


def command_profile(args):
    plan = _prepared_plan(args.model, args.format, training=args.mode == "train",
                          precision=args.precision)
    for _ in range(args.warmup):
        plan.train_step() if plan.training else plan.predict_step()
    timed = []
    for _ in range(args.steps):
        start = time.perf_counter()
        plan.train_step() if plan.training else plan.predict_step()
        timed.append(time.perf_counter() - start)
    profile = plan.profile(args.steps)
    step = float(np.median(timed)) * 1e3
    inside = sum(v for k, v in profile.items() if k != "outside calls") * 1e3
    print(f"{args.model} {args.mode} {args.format}: median step {step:.2f} ms, sum of call "
          f"medians {inside:.2f} ms, outside calls {100 * max(step - inside, 0) / step:.1f}%")
    for label, seconds in sorted(profile.items(), key=lambda kv: -kv[1]):
        print(f"  {seconds * 1e3:8.3f} ms  {100 * seconds * 1e3 / step:5.1f}%  {label}")
    print("by kind of call:")
    for line in profile_report.lines(plan, profile, step, measure_peaks()):
        print(line)
    if args.mode == "train" and args.fit_rounds:
        from .peers import kiln_runner
        cost = kiln_runner.fit_cost(args.model, args.format, args.precision, args.fit_steps,
                                    args.fit_rounds, args.fit_clock)
        print(f"fit() on arrays, epochs of {args.fit_steps} and {3 * args.fit_steps} steps "
              f"alternated with plan steps, medians of {args.fit_rounds}: "
              f"{harness.fit_cost_text(cost)}")
    return 0


def command_compare(args):
    frameworks = args.frameworks or list(FRAMEWORKS)
    report = harness.run(args.models, args.formats, args.modes, args.precisions, frameworks,
                         args.repeats, args.steps, args.warmup, args.json, args.log,
                         args.fit_rounds)
    print(harness.format_table(report))
    print(f"JSON: {args.json}")
    return 0


def command_report(args):
    import json
    with open(args.json) as f:
        print(harness.markdown(json.load(f)))
    return 0


def command_augmentation(args):
    from . import augmentation as measure
    steps = -(-args.samples // 32)
    if args.kind in ("generator", "both"):
        plain, augmented = measure.epoch_seconds(args.samples, args.rounds, args.format)
        print(f"cifar10_cnn {args.format}, {args.samples} samples ({steps} steps of 32): epoch "
              f"{plain:.2f} s on arrays, {augmented:.2f} s with the example's augmentation "
              f"({100 * (augmented / plain - 1):+.1f}%), medians of {args.rounds}")
    if args.kind in ("layers", "both"):
        plain, augmented = measure.layer_epoch_seconds(args.samples, args.rounds, args.format)
        print(f"cifar10_cnn {args.format}, {args.samples} samples ({steps} steps of 32): epoch "
              f"{plain:.2f} s, {augmented:.2f} s with {' + '.join(measure.AUGMENTATION_LAYERS)}"
              f" in the model ({100 * (augmented / plain - 1):+.1f}%; target within +10%), "
              f"medians of {args.rounds}")
    return 0


def main(argv=None):
    given = list(sys.argv[1:] if argv is None else argv)
    if given[:1] == ["scaling"]:  # data-parallel fit on 1 and N MPI ranks (scaling.py)
        from .scaling import main as scaling_main
        return scaling_main(given[1:])
    parser = argparse.ArgumentParser(prog="python -m kiln.bench")
    sub = parser.add_subparsers(dest="command")
    compare = sub.add_parser("compare", help="kiln and installed peers side by side")
    compare.add_argument("--models", nargs="+", choices=sorted(MODELS), default=sorted(MODELS))
    compare.add_argument("--formats", nargs="+", choices=FORMATS, default=FORMATS)
    compare.add_argument("--modes", nargs="+", choices=["train", "infer"],
                         default=["train", "infer"])
    compare.add_argument("--precisions", nargs="+", choices=["f32", "bf16"], default=["f32"])
    compare.add_argument("--frameworks", nargs="+", choices=sorted(FRAMEWORKS))
    compare.add_argument("--repeats", type=int, default=5)
    compare.add_argument("--steps", type=int, default=15)
    compare.add_argument("--warmup", type=int, default=3)
    compare.add_argument("--fit-rounds", type=int, default=5,
                         help="rounds of kiln's fit() overhead measure per trained model "
                              "(0: skip it; each round is 6x --steps steps)")
    compare.add_argument("--json", default="bench-results/compare.json")
    compare.add_argument("--log", default="bench-results/workers.log")
    train = sub.add_parser("train", help="median ms per kiln training step and %% of peak")
    profile = sub.add_parser("profile", help="median time of every call of a kiln step")
    for p in (train, profile):
        p.add_argument("--model", choices=sorted(MODELS), default="mnist_cnn")
        p.add_argument("--format", choices=FORMATS, default="channels_last")
        p.add_argument("--steps", type=int, default=50 if p is train else 20)
        p.add_argument("--warmup", type=int, default=5)
    profile.add_argument("--mode", choices=["train", "infer"], default="train")
    profile.add_argument("--precision", choices=["f32", "bf16"], default="f32")
    profile.add_argument("--fit-steps", type=int, default=12,
                         help="train mode: fit() epochs of this many and 3x as many steps")
    profile.add_argument("--fit-rounds", type=int, default=5,
                         help="train mode: rounds of the fit() overhead measure (0: skip it)")
    profile.add_argument("--fit-clock", choices=["wall", "cpu"], default="wall",
                         help="train mode: time the fit() overhead measure by the wall clock or "
                         "by the process's CPU time (steadier on a loaded machine)")
    augmentation = sub.add_parser(
        "augmentation", help="cifar10_cnn epoch with and without augmentation (Keras 2's "
                             "ImageDataGenerator, Keras 3's augmentation layers in the model)")
    augmentation.add_argument("--kind", choices=["generator", "layers", "both"],
                              default="both")
    augmentation.add_argument("--samples", type=int, default=3200)
    augmentation.add_argument("--rounds", type=int, default=3)
    augmentation.add_argument("--format", choices=FORMATS, default="channels_last")
    report = sub.add_parser("report", help="a compare run's JSON as Markdown")
    report.add_argument("json", nargs="?", default="bench-results/compare.json")
    ops_bench.add_parser(sub)
    custom_layer.add_parser(sub)
    soak.add_parser(sub)
    time_to_accuracy.add_parser(sub)
    args = parser.parse_args(argv)
    if args.command is None:
        args = parser.parse_args(["compare", *(argv or sys.argv[1:])])
    return {"train": command_train, "profile": command_profile, "compare": command_compare,
            "report": command_report, "augmentation": command_augmentation,
            "ops": ops_bench.command, "custom-layer": custom_layer.command,
            "soak": soak.command, "time-to-accuracy": time_to_accuracy.command}[args.command](args)


if __name__ == "__main__":
    sys.exit(main())
