import io

import numpy as np
import pytest

from kiln.keras import utils
from kiln.keras.utils import Progbar, normalize, to_categorical


class FakeClock:
    """Stands in for `time.monotonic`; tests set `now` before each step."""

    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


@pytest.fixture
def clock(monkeypatch):
    fake = FakeClock()
    monkeypatch.setattr(utils, "_clock", fake)
    return fake


# to_categorical

def test_to_categorical_values_and_dtype():
    result = to_categorical([0, 2, 1, 2])
    assert result.dtype == np.float32
    np.testing.assert_array_equal(result, [
        [1, 0, 0], [0, 0, 1], [0, 1, 0], [0, 0, 1]])


def test_to_categorical_column_vector_and_num_classes():
    result = to_categorical(np.array([[1], [3]]), num_classes=5, dtype="int64")
    assert result.shape == (2, 5)
    assert result.dtype == np.int64
    np.testing.assert_array_equal(result, [[0, 1, 0, 0, 0], [0, 0, 0, 1, 0]])


def test_to_categorical_keeps_other_leading_axes():
    assert to_categorical(np.zeros((2, 3), dtype=int), 4).shape == (2, 3, 4)
    assert to_categorical(2, 3).tolist() == [0.0, 0.0, 1.0]


def test_to_categorical_accepts_whole_floats():
    np.testing.assert_array_equal(
        to_categorical(np.array([1.0, 0.0])), [[0, 1], [1, 0]])


def test_to_categorical_rejects_non_integer_floats():
    with pytest.raises(ValueError) as error:
        to_categorical([0.0, 1.5])
    assert str(error.value) == (
        "to_categorical: argument y must contain integer class labels, "
        "got 1.5")
    with pytest.raises(ValueError, match="got nan"):
        to_categorical([np.nan])
    with pytest.raises(ValueError, match="got an array of dtype <U1"):
        to_categorical(["a"])


def test_to_categorical_rejects_out_of_range_labels():
    with pytest.raises(ValueError) as error:
        to_categorical([0, 10, 3], num_classes=10)
    assert str(error.value) == (
        "to_categorical: argument y must contain class labels in [0, 10), "
        "got 10")
    with pytest.raises(ValueError) as error:
        to_categorical([2, -1])
    assert str(error.value) == (
        "to_categorical: argument y must contain class labels in [0, 3), "
        "got -1")


def test_to_categorical_rejects_bad_num_classes_and_empty_input():
    with pytest.raises(ValueError, match="num_classes must be a positive "
                                         "integer, got 0"):
        to_categorical([0], num_classes=0)
    with pytest.raises(ValueError, match="num_classes is required"):
        to_categorical([])
    assert to_categorical([], num_classes=3).shape == (0, 3)


# normalize

def test_normalize_l2_along_last_axis():
    result = normalize(np.array([[3.0, 4.0], [0.0, 0.0]]))
    np.testing.assert_allclose(result, [[0.6, 0.8], [0.0, 0.0]])


def test_normalize_axis_and_order():
    x = np.array([[1.0, 2.0], [3.0, 6.0]])
    np.testing.assert_allclose(normalize(x, axis=0, order=1),
                               [[0.25, 0.25], [0.75, 0.75]])
    assert normalize([[3, 4]]).dtype == np.float32


# Progbar

def test_summary_line_when_not_a_terminal(clock):
    stream = io.StringIO()  # isatty() is False
    bar = Progbar(target=4, stream=stream)
    clock.now = 1.0  # the first step (compilation) is slow...
    bar.update(1, [("loss", 1.0), ("accuracy", 0.5)])
    clock.now = 1.25
    bar.update(2, [("loss", 0.5), ("accuracy", 0.75)])
    clock.now = 1.5
    bar.update(3, [("loss", 0.5), ("accuracy", 0.75)])
    assert stream.getvalue() == ""  # no partial lines
    clock.now = 1.75
    bar.update(4, [("loss", 0.0), ("accuracy", 1.0)])
    # ...and is left out of the time per step: (1.75 - 1) / 3.
    assert stream.getvalue() == (
        "4/4 - 2s - 250ms/step - loss: 0.5000 - accuracy: 0.7500\n")


def test_verbose_2_prints_summary_even_on_a_terminal(clock):
    stream = io.StringIO()
    bar = Progbar(target=2, verbose=2, dynamic=True, stream=stream)
    clock.now = 3.0
    bar.update(1, [("loss", 0.0001)])
    clock.now = 5.0
    bar.update(2, [("loss", 0.0001)])
    assert stream.getvalue() == "2/2 - 5s - 2s/step - loss: 1.0000e-04\n"


def test_verbose_0_prints_nothing(clock):
    stream = io.StringIO()
    bar = Progbar(target=2, verbose=0, dynamic=True, stream=stream)
    bar.update(1, [("loss", 1.0)])
    bar.update(2, [("loss", 1.0)])
    assert stream.getvalue() == ""


def styled_bar(count, done, rest, time):
    """Keras 3's in-place bar: bold count, green done part (if any), white rest, bold time."""
    green = f"\x1b[32m{'━' * done}\x1b[0m" if done else ""
    return (f"\x1b[1m{count}\x1b[0m {green}\x1b[37m{'━' * rest}\x1b[0m"
            f" \x1b[1m{time}\x1b[0m")


def test_dynamic_bar_redraws_in_place(clock):
    stream = io.StringIO()
    bar = Progbar(target=4, width=10, dynamic=True, stream=stream)
    clock.now = 1.0
    bar.update(1, [("loss", 1.0)])
    # the ETA (3 steps left at 1 s a step), then the time per step
    first = "\r" + styled_bar("1/4", 2, 8, "3s") + " 1s/step - loss: 1.0000"
    assert stream.getvalue() == first
    clock.now = 1.01  # within the 0.05 s interval: no redraw
    bar.update(2, [("loss", 0.5)])
    assert stream.getvalue().count("\r") == 1
    clock.now = 2.5
    bar.update(4, [("loss", 0.0)])
    # finished: the elapsed time instead of the ETA; the first step left out of the rate
    assert stream.getvalue() == first + (
        "\r" + styled_bar("4/4", 10, 0, "2s") + " 500ms/step - loss: 0.3750\n")


def test_dynamic_bar_blanks_out_longer_previous_line(clock):
    stream = io.StringIO()
    bar = Progbar(target=None, dynamic=True, stream=stream)
    bar.update(1, [("a_long_metric_name", 1.0)])
    bar.update(2, finalize=True)
    first, second = stream.getvalue().split("\r")[1:]
    assert len(second.rstrip("\n")) == len(first)
    assert second.startswith("      2/Unknown \x1b[1m0s\x1b[0m 0s/step ")


def test_running_mean_is_weighted(clock):
    stream = io.StringIO()
    bar = Progbar(target=3, stream=stream)
    bar.update(1, [("loss", 1.0)], weight=32)
    bar.update(2, [("loss", 0.5)], weight=32)
    bar.update(3, [("loss", 0.25)], weight=16)
    # (32 * 1 + 32 * 0.5 + 16 * 0.25) / 80 = 0.65
    assert stream.getvalue().endswith(" - loss: 0.6500\n")


def test_default_weight_is_steps_advanced(clock):
    stream = io.StringIO()
    bar = Progbar(target=4, stream=stream)
    bar.update(1, [("loss", 1.0)])
    bar.update(4, [("loss", 0.0)])  # counts for 3 steps
    assert stream.getvalue().endswith(" - loss: 0.2500\n")


def test_stateful_metrics_are_shown_as_given(clock):
    stream = io.StringIO()
    bar = Progbar(target=2, stream=stream, stateful_metrics=["lr"])
    bar.update(1, [("lr", 0.1), ("loss", 1.0)])
    bar.add(1, [("lr", 0.05), ("loss", 2.0)])
    assert stream.getvalue().endswith(" - lr: 0.0500 - loss: 1.5000\n")


def test_default_stream_is_stdout_looked_up_at_write_time(capsys, clock):
    bar = Progbar(target=1)
    bar.update(1, [("loss", 2.0)])
    assert capsys.readouterr().out == "1/1 - 0s - 0s/step - loss: 2.0000\n"
