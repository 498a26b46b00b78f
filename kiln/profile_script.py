"""`kiln profile script.py`: run a user's training script as it is and profile the first
model that calls fit().

While the script runs, `Model.fit` is wrapped: the first model to call it gets a recording
Session for `warmup` batches untouched, then `steps` plain and `steps` recorded batches in
turn (real batches of the script's data; the model trains as it would). Once they have run,
the script is stopped (unless `keep_running`), the table is printed and the trace and chart
written. If fit ends first, whatever was recorded is reported when it returns.

A front-end tool beside cli.py and launch.py: it imports kiln.keras, which kiln.profiler
does not.
"""

import os
import runpy
import sys

from .profiler import measure_peaks
from .profiler.recorder import Session, alternating
from .profiler.report import Profile


class ProfileDone(Exception):
    """Raised inside the script's fit() once the profiled batches have run, to stop it."""


class ScriptProfiler:
    """Args:
        steps: recorded batches (as many plain ones run in turn to measure the overhead).
        warmup: batches run untouched first (the first builds the plan).
        keep_running: let the script go on after the profiled batches.
        trace / png / tensorboard: where to write the trace JSON, the bar chart and the
            TensorBoard profile (None: not written).
        print_fn: where the table goes.
        top: show only this many of the slowest calls (all when None).
    """

    def __init__(self, steps=10, warmup=2, keep_running=False, trace=None, png=None,
                 tensorboard=None, print_fn=print, top=None):
        self.steps, self.warmup, self.keep_running = steps, warmup, keep_running
        self.top = top
        self.trace, self.png, self.tensorboard = trace, png, tensorboard
        self.print_fn = print_fn
        self.profile = None
        self._started = False

    def run(self, path, args=()):
        """Run the script at `path` with `args` as its sys.argv[1:]; returns the Profile (None
        if no model called fit)."""
        from .keras.models.model import Model

        had_own = "fit" in Model.__dict__
        original = Model.fit
        profiler = self

        def fit(model, *fit_args, **fit_kwargs):
            if profiler._started:
                return original(model, *fit_args, **fit_kwargs)
            profiler._started = True
            session = Session(model, profiler._schedule())
            session.start()
            try:
                return original(model, *fit_args, **fit_kwargs)
            finally:
                session.stop()
                profiler._report(model, session)

        saved_argv, saved_path = sys.argv, list(sys.path)
        sys.argv = [os.fspath(path), *args]
        sys.path.insert(0, os.path.dirname(os.path.abspath(path)))
        Model.fit = fit
        try:
            runpy.run_path(os.fspath(path), run_name="__main__")
        except ProfileDone:
            self.print_fn("(the script was stopped after the profiled batches; "
                          "--keep-running lets it go on)")
        finally:
            if had_own:
                Model.fit = original
            else:
                del Model.fit
            sys.argv, sys.path[:] = saved_argv, saved_path
        if not self._started:
            self.print_fn("kiln profile: no model called fit(): nothing was profiled")
        return self.profile

    def _schedule(self):
        turns = alternating(self.warmup, self.steps)
        total = self.warmup + 2 * self.steps

        def schedule(index):
            if index >= total and not self.keep_running:
                raise ProfileDone()
            return turns(index)
        return turns if self.keep_running else schedule

    def _report(self, model, session):
        if not session.records:
            self.print_fn(f"kiln profile: model '{model.name}' ran {session.steps} training "
                          f"steps, fewer than the {self.warmup} warm-up ones: nothing recorded")
            return
        self.profile = Profile(model, session.records, session.plain_ns, measure_peaks())
        self.print_fn(self.profile.table(self.top))
        if self.trace:
            self.print_fn(f"trace: {self.profile.save_trace(self.trace)}")
        if self.tensorboard:
            self.print_fn(f"TensorBoard profile: "
                          f"{self.profile.save_tensorboard(self.tensorboard)}")
        if self.png:
            self.print_fn(f"chart: {self.profile.save_chart(self.png)}")


def main(argv=None):
    """`kiln profile script.py [--steps N] [--warmup N] [--trace out.json] [--png out.png]
    [--tensorboard log_dir] [--top N] [--keep-running] [-- script arguments]`."""
    import argparse

    argv = list(sys.argv[1:] if argv is None else argv)
    script_args = argv[argv.index("--") + 1:] if "--" in argv else []
    own_args = argv[:argv.index("--")] if "--" in argv else argv
    parser = argparse.ArgumentParser(
        prog="kiln profile",
        description="Run a training script and profile the first model that calls fit(): "
                    "every call of its training step with its Keras layer, phase, oneDNN "
                    "kernel, time, FLOPs and bytes. Arguments after -- go to the script.")
    parser.add_argument("script", help="the Python training script to run")
    parser.add_argument("--steps", type=int, default=10, help="batches to record (10)")
    parser.add_argument("--warmup", type=int, default=2, help="batches before recording (2)")
    parser.add_argument("--trace", help="write a Chrome trace / Perfetto JSON file here")
    parser.add_argument("--png", help="write the per-layer forward/backward bar chart here")
    parser.add_argument("--tensorboard", metavar="LOG_DIR",
                        help="write the trace where TensorBoard's profile plugin reads it")
    parser.add_argument("--top", type=int, help="show only the N slowest calls")
    parser.add_argument("--keep-running", action="store_true",
                        help="let the script go on after the profiled batches")
    args = parser.parse_args(own_args)
    if args.steps < 1 or args.warmup < 0:
        parser.error(f"--steps must be >= 1 and --warmup >= 0, got {args.steps} and "
                     f"{args.warmup}")
    profiler = ScriptProfiler(args.steps, args.warmup, args.keep_running, args.trace,
                              args.png, args.tensorboard, top=args.top)
    profile = profiler.run(args.script, script_args)
    return 0 if profile is not None else 1
