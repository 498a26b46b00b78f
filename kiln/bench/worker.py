"""A benchmark worker: one framework per process, driven by the harness over a pipe.

    python -m kiln.bench.worker FRAMEWORK [RUNNER]

Reads one JSON request per line on stdin: {"model", "format", "mode", "precision", "steps",
"warmup"}; answers one JSON line: {"times_ms": [...]} or {"unsupported": reason} or
{"error": text}. kiln's worker also answers {"what": "profile"} (per-call times) and
{"what": "first_step"} (seconds from a new model to its first fit() batch).
Prepared models are kept between requests, so repeats only time steps. A framework's
environment variables are set here, before its runner is imported; its options go to
prepare().
RUNNER (a module name) replaces the framework's model runner with another exposing the same
functions (`kiln bench ops` times single ops this way, in the framework's environment).
Library chatter goes to stderr; the answer channel is the original stdout.
"""

import importlib
import json
import os
import sys
import time
import traceback

from .peers import FRAMEWORKS


def configure_environment(framework, environ=os.environ):
    """Set (or, for None, remove) the framework's variables (KERAS_BACKEND,
    TF_ENABLE_ONEDNN_OPTS, ...): they must be in place before its runner, and so the framework
    itself, is imported."""
    for name, value in FRAMEWORKS[framework].env.items():
        if value is None:
            environ.pop(name, None)
        else:
            environ[name] = value
    environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")


def error_summary(error, limit=400):
    """The error's type and message, without the graph traceback that TensorFlow puts inside
    its messages: the first line and the last two (where it says what went wrong)."""
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    if len(lines) > 3:
        lines = [lines[0], "...", *lines[-2:]]
    text = f"{type(error).__name__}: {' '.join(lines)}"
    return text if len(text) <= limit else text[:limit - 3] + "..."


def main(framework, runner_module=None):
    answers = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)  # anything the frameworks print goes to stderr
    configure_environment(framework)
    spec = FRAMEWORKS[framework]
    runner = importlib.import_module(runner_module or spec.module)
    prepared = {}
    for line in sys.stdin:
        request = json.loads(line)
        key = (request["model"], request["format"], request["mode"], request["precision"])
        try:
            if request.get("what") == "profile":
                answers.write(json.dumps(runner.profile(
                    *key, request["steps"], fit_rounds=request.get("fit_rounds", 5))) + "\n")
                continue
            if request.get("what") == "first_step":
                seconds = runner.seconds_to_first_step(request["model"], request["format"])
                answers.write(json.dumps({"seconds": seconds}) + "\n")
                continue
            reason = runner.unsupported(*key)
            if reason:
                answers.write(json.dumps({"unsupported": reason}) + "\n")
                continue
            if key not in prepared:
                start = time.perf_counter()
                prepared[key] = runner.prepare(*key, **spec.options)
                prepared[key]()  # first call compiles / builds the plan
                setup_seconds = time.perf_counter() - start
            else:
                setup_seconds = 0.0
            step = prepared[key]
            for _ in range(request["warmup"]):
                step()
            times = []
            for _ in range(request["steps"]):
                start = time.perf_counter()
                step()
                times.append((time.perf_counter() - start) * 1e3)
            answers.write(json.dumps({"times_ms": times, "setup_s": setup_seconds}) + "\n")
        except Exception as error:  # report, keep serving the other configurations
            traceback.print_exc()  # the whole story goes to the log
            answers.write(json.dumps({"error": error_summary(error)}) + "\n")


if __name__ == "__main__":
    main(*sys.argv[1:3])
