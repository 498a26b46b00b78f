"""interrupts_deferred: SIGINT inside the body reaches the previous handler once the body is
done (a second one at once), the handler is put back, and other threads are left alone."""

import signal
import threading

import pytest

from kiln.plan.interrupts import interrupts_deferred


@pytest.fixture(autouse=True)
def python_sigint_handler():
    """Python's own handler, as in a foreground process: a run started in the background
    inherits SIGINT ignored, and these tests are about the handler Python installs."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


def test_sigint_waits_for_the_body_then_raises_keyboard_interrupt():
    done = []
    with pytest.raises(KeyboardInterrupt):
        with interrupts_deferred():
            signal.raise_signal(signal.SIGINT)
            done.append("rest of the step")
    assert done == ["rest of the step"]
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_the_previous_handler_gets_the_held_signal_once():
    calls = []
    previous = signal.signal(signal.SIGINT, lambda signum, frame: calls.append(signum))
    try:
        with interrupts_deferred():
            with interrupts_deferred():  # a step inside a step: held by the outer one
                signal.raise_signal(signal.SIGINT)
            assert calls == []
        assert calls == [signal.SIGINT]
    finally:
        signal.signal(signal.SIGINT, previous)


def test_a_second_sigint_is_not_held():
    done = []
    with pytest.raises(KeyboardInterrupt):
        with interrupts_deferred():
            signal.raise_signal(signal.SIGINT)
            signal.raise_signal(signal.SIGINT)
            done.append("never")
    assert done == []
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_outside_the_main_thread_nothing_changes():
    seen = []

    def step():
        with interrupts_deferred():
            seen.append(signal.getsignal(signal.SIGINT))

    thread = threading.Thread(target=step)
    thread.start()
    thread.join()
    assert seen == [signal.default_int_handler]
