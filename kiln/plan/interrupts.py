"""Ctrl-C between training steps, never inside one.

A KeyboardInterrupt is raised wherever the main thread happens to be when SIGINT arrives: in
the middle of a step it left the model torn (the optimizer had updated some weights and not
the others, or all of them but not its `iterations`, which the next learning rate, Adam's bias
correction and a checkpoint's step count read; moving statistics a step ahead of the
weights). `interrupts_deferred()` holds SIGINT while a step runs and delivers it to the
handler that was installed before (Python's default raises KeyboardInterrupt) once the step
is whole, so an interrupted run stops at a step boundary and can be saved and resumed.

A second SIGINT during the same step is not held: it goes to the previous handler at once,
so a step that never ends (a data-parallel peer that died while the ranks sum their
gradients) can still be interrupted, at the price of that step.

Signal handlers can only be set from the main thread; elsewhere (a step run in a worker
thread) SIGINT does not reach the step anyway, and nothing is changed.
"""

import _signal  # the C functions: signal's wrappers cost more per step (docs/performance.md)
import signal
import threading


class _Deferral:
    """The main thread's context; nested uses (fit's batch around the plan's step) hold for
    the outermost."""

    def __init__(self):
        self.depth = 0
        self.installed = False
        self.previous = None
        self.held = []

    def __enter__(self):
        self.depth += 1
        if self.depth > 1:
            return self
        self.previous = _signal.getsignal(signal.SIGINT)
        # ignored, or a handler not set from Python: nothing of ours to hold it for
        self.installed = self.previous not in (signal.SIG_IGN, None)
        if self.installed:
            _signal.signal(signal.SIGINT, self.hold)
        return self

    def hold(self, signum, frame):
        if not self.held:
            self.held.append((signum, frame))
            return
        self.held.clear()  # the second one: the user insists, the step is given up
        _signal.signal(signal.SIGINT, self.previous)
        deliver(self.previous, signum, frame)

    def __exit__(self, *exc_info):
        self.depth -= 1
        if self.depth or not self.installed:
            return
        self.installed = False
        if _signal.getsignal(signal.SIGINT) == self.hold:
            _signal.signal(signal.SIGINT, self.previous)
        if self.held:
            signum, frame = self.held.pop()
            deliver(self.previous, signum, frame)


class _Elsewhere:
    """Outside the main thread no signal handler runs (nor can one be set)."""

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        return


_MAIN, _ELSEWHERE = _Deferral(), _Elsewhere()


def interrupts_deferred():
    """A context (`with interrupts_deferred(): ...`) that runs its body with SIGINT held and
    delivers a held SIGINT to the previous handler when the body ends."""
    if threading.current_thread() is threading.main_thread():
        return _MAIN
    return _ELSEWHERE


def deliver(handler, signum, frame):
    """What SIGINT would have done under `handler`: call it, or for SIG_DFL raise the signal
    again now that the default action is back."""
    if handler == signal.SIG_DFL:
        signal.raise_signal(signum)
    elif callable(handler):
        handler(signum, frame)
