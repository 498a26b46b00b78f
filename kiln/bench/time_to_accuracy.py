"""Time to accuracy: the classic mnist_cnn script trained on real MNIST until its test accuracy
reaches a target (99% by default), by kiln and each installed peer, in a process of its own.

    python -m kiln.bench time-to-accuracy
    python -m kiln.bench time-to-accuracy --frameworks kiln torch --precisions f32 bf16

MNIST comes from kiln.keras.datasets.mnist ($KILN_DATASETS/mnist IDX files or the Keras cache);
this process scales it (x/255, float32) and writes it once to a temporary .npz, so every
framework trains on the same arrays. Each worker (kiln.bench.peers.accuracy_worker) runs the
script's semantics: batch 128, shuffled every epoch, Adadelta(1.0), the test set evaluated after
every epoch; it stops at the first epoch reaching the target. "to target" is the wall-clock from
making the model to the end of that epoch's evaluation (building, compiling, tracing and every
evaluation included); "training only" leaves the evaluations out. The ratio is to the best peer's
"to target" at the same precision. The sgemm peak is measured in this run, before and after.
"""

import json
import os
import subprocess
import sys
import tempfile

import numpy as np

from .peak import sgemm_gflops
from .peers import installed
from .worker import configure_environment

TTA_FRAMEWORKS = ["kiln", "keras-tensorflow", "keras-jax", "torch"]


def mnist_arrays(train_limit=None):
    """The scaled MNIST arrays every worker gets: x float32 in [0, 1], NHWC; y int labels."""
    from ..keras.datasets import mnist
    (x_train, y_train), (x_test, y_test) = mnist.load_data()
    if train_limit:
        x_train, y_train = x_train[:train_limit], y_train[:train_limit]
    scale = np.float32(1 / 255)
    return {"x_train": (x_train[..., None] * scale).astype("float32"),
            "y_train": y_train.astype("int32"),
            "x_test": (x_test[..., None] * scale).astype("float32"),
            "y_test": y_test.astype("int32")}


def run_worker(framework, precision, path, max_epochs, target):
    """The worker's result: {"framework", "precision", "epochs": [{accuracy, seconds,
    eval_seconds}, ...]} or {"framework", "precision", "error": text}."""
    env = dict(os.environ)
    configure_environment(framework, env)
    command = [sys.executable, "-m", "kiln.bench.peers.accuracy_worker", framework, precision,
               path, str(max_epochs), str(target)]
    done = subprocess.run(command, env=env, capture_output=True, text=True)
    for line in reversed(done.stdout.splitlines()):
        if line.startswith("RESULT "):
            return json.loads(line[len("RESULT "):])
    tail = " | ".join((done.stderr or done.stdout).strip().splitlines()[-3:])
    return {"framework": framework, "precision": precision,
            "error": f"exit {done.returncode}: {tail[-400:]}"}


def summary(result, target):
    """Epochs to the target (None if never reached), wall-clock to it and without the
    evaluations (the last epoch's if never reached), the best test accuracy."""
    epochs = result["epochs"]
    reached = next((i for i, e in enumerate(epochs) if e["accuracy"] >= target), None)
    last = epochs[reached if reached is not None else -1]
    return {"epochs": None if reached is None else reached + 1, "ran": len(epochs),
            "seconds": last["seconds"], "train_seconds": last["seconds"] - last["eval_seconds"],
            "best_accuracy": max(e["accuracy"] for e in epochs)}


def table(results, target, peak):
    """The report as text lines."""
    rows = []
    best = {}
    for r in results:
        if "error" not in r:
            r["summary"] = summary(r, target)
            s = r["summary"]
            if r["framework"] != "kiln" and s["epochs"] is not None:
                best[r["precision"]] = min(best.get(r["precision"], float("inf")), s["seconds"])
    header = (f"{'framework':<18}{'precision':<10}{'epochs to ' + format(target, '.2%'):>17}"
              f"{'to target s':>13}{'training only s':>17}{'vs best peer':>14}{'best acc':>10}")
    rows.append(header)
    for r in results:
        name = f"{r['framework']:<18}{r['precision']:<10}"
        if "error" in r:
            rows.append(name + f"error: {r['error']}")
            continue
        s = r["summary"]
        epochs = str(s["epochs"]) if s["epochs"] else f"not in {s['ran']}"
        ratio = (f"{s['seconds'] / best[r['precision']]:.2f}x"
                 if s["epochs"] and r["precision"] in best else "-")
        rows.append(name + f"{epochs:>17}{s['seconds']:>13.1f}{s['train_seconds']:>17.1f}"
                    f"{ratio:>14}{s['best_accuracy']:>10.4f}")
    rows.append(f"same-run sgemm peak: {peak:.1f} GFLOP/s (f32); 'to target' includes model "
                "building, compiling and the test evaluation after every epoch")
    return rows


def _progress(result, target):
    """One finished worker, for the log: a partial run still says what it measured."""
    name = f"{result['framework']} {result['precision']}"
    if "error" in result:
        return f"{name}: {result['error']}"
    accuracies = " ".join(f"{e['accuracy']:.4f}@{e['seconds']:.1f}s" for e in result["epochs"])
    return f"{name}: test accuracy by epoch {accuracies} (target {target})"


def command(args):
    frameworks = args.frameworks or TTA_FRAMEWORKS
    peak = sgemm_gflops()
    results = []
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "mnist.npz")
        np.savez(path, **mnist_arrays(args.train_limit))
        for precision in args.precisions:
            for framework in frameworks:
                missing = installed(framework)
                if missing:
                    results.append({"framework": framework, "precision": precision,
                                    "error": missing})
                    continue
                results.append(run_worker(framework, precision, path, args.max_epochs,
                                          args.target))
                print(_progress(results[-1], args.target), file=sys.stderr, flush=True)
    peak = max(peak, sgemm_gflops())
    for line in table(results, args.target, peak):
        print(line)
    if args.json:
        os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
        with open(args.json, "w") as f:
            json.dump({"target": args.target, "sgemm_peak": peak, "results": results}, f,
                      indent=1)
    return 0


def add_parser(sub):
    p = sub.add_parser("time-to-accuracy",
                       help="wall-clock of mnist_cnn on real MNIST to 99%% test accuracy")
    p.add_argument("--frameworks", nargs="+", choices=TTA_FRAMEWORKS)
    p.add_argument("--precisions", nargs="+", choices=["f32", "bf16"], default=["f32"])
    p.add_argument("--max-epochs", type=int, default=12)
    p.add_argument("--target", type=float, default=0.99)
    p.add_argument("--train-limit", type=int, help="train on the first N samples only")
    p.add_argument("--json", help="also write the per-epoch results here")
