"""kiln's Progbar prints what real Keras 3's prints for the same steps, values and clock: the
in-place terminal bar (ETA and time per step while running, elapsed time and time per step at
the end, Keras's terminal styles) and the one-line summary (seconds for the epoch, time per
step) that kiln also prints when the output is not a terminal."""

import io

import keras_oracle
import pytest

from kiln.keras import utils

# (time, step, values); step 3 comes within Keras's 0.05 s redraw interval, so neither redraws
STEPS = [(101.0, 1, [("loss", 1.25), ("accuracy", 0.5)]),
         (101.5, 2, [("loss", 0.75), ("accuracy", 0.625)]),
         (101.52, 3, [("loss", 0.5), ("accuracy", 0.75)]),
         (300.0, 4, [("loss", 0.25), ("accuracy", 0.875)]),
         (320.0, 5, [("loss", 0.0004), ("accuracy", 1.0)])]


class Clock:
    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now

    def time(self):  # what Keras's progbar module calls, as `time.time()`
        return self.now


@pytest.fixture
def keras_progbar(monkeypatch):
    keras_oracle.real_keras()
    from keras.src.utils import progbar

    clock = Clock()
    monkeypatch.setattr(progbar, "time", clock)
    monkeypatch.setattr(utils, "_clock", clock)
    return progbar, clock


def run(make_bar, clock, target):
    clock.now = 100.0
    bar = make_bar()
    for now, step, values in STEPS[:target]:
        clock.now = now
        bar.update(step, values)
    return bar


@pytest.mark.parametrize("target", [5, 4])
def test_terminal_bar_as_keras_draws_it(keras_progbar, capsys, target):
    progbar, clock = keras_progbar
    metrics = ["loss", "accuracy"]  # shown as given: the format is what is compared here

    def keras_bar():
        bar = progbar.Progbar(target, stateful_metrics=metrics)
        bar._dynamic_display = True
        return bar

    run(keras_bar, clock, target)
    # Keras also backspaces over the previous line before its "\r"; the "\r" alone suffices
    expected = capsys.readouterr().out.replace("\b", "")
    stream = io.StringIO()
    run(lambda: utils.Progbar(target, stateful_metrics=metrics, dynamic=True, stream=stream),
        clock, target)
    assert stream.getvalue() == expected
    assert expected.count("\r") == target - 1 and expected.endswith("\n")
    if target == 5:  # an ETA past a minute: 66 s a step, one step left at step 4
        assert "\x1b[1m1:06\x1b[0m 66s/step" in expected


def test_summary_line_as_keras_verbose_2_prints_it(keras_progbar, capsys):
    progbar, clock = keras_progbar
    run(lambda: progbar.Progbar(5, verbose=2, stateful_metrics=["loss", "accuracy"]), clock, 5)
    expected = capsys.readouterr().out
    stream = io.StringIO()
    run(lambda: utils.Progbar(5, stateful_metrics=["loss", "accuracy"], stream=stream),
        clock, 5)  # verbose=1 off a terminal prints this line too
    assert stream.getvalue() == expected == (
        "5/5 - 220s - 55s/step - loss: 4.0000e-04 - accuracy: 1.0000\n")
