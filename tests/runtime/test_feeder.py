"""BatchFeeder yields exactly x[order], y[order] in batches, in aligned buffers, gathered in the
caller's thread or (a large batch) in a background thread."""

import threading
import time

import numpy as np
import pytest

from kiln.runtime import feeder as feeder_module
from kiln.runtime.feeder import BatchFeeder


@pytest.mark.parametrize("background", [False, True])
def test_batches_follow_the_order_and_the_last_one_is_smaller(background):
    rng = np.random.default_rng(0)
    x = rng.random((10, 3, 4), dtype=np.float32)
    y = rng.random((10, 2), dtype=np.float32)
    order = rng.permutation(10)
    seen_x, seen_y = [], []
    for x_batch, y_batch in BatchFeeder(x, y, order, 4, background=background).batches():
        assert x_batch.ctypes.data % 64 == 0 and x_batch.flags.c_contiguous
        seen_x.append(x_batch.copy())
        seen_y.append(y_batch.copy())
    assert [len(b) for b in seen_x] == [4, 4, 2]
    np.testing.assert_array_equal(np.concatenate(seen_x), x[order])
    np.testing.assert_array_equal(np.concatenate(seen_y), y[order])


@pytest.mark.parametrize("background", [False, True])
def test_a_yielded_batch_is_not_overwritten_by_the_next_gather(background):
    x = np.arange(6 * 2, dtype=np.float32).reshape(6, 2)
    y = np.zeros((6, 1), np.float32)
    feeder = BatchFeeder(x, y, np.arange(6), 2, background=background)
    for step, (x_batch, _) in enumerate(feeder.batches()):
        expected = x[2 * step:2 * step + 2].copy()
        time.sleep(0.01)  # give a background gather of the next batch time to run
        np.testing.assert_array_equal(x_batch, expected)


def test_empty_order_yields_nothing():
    x = np.zeros((0, 2), np.float32)
    assert list(BatchFeeder(x, x, np.arange(0), 4).batches()) == []


def test_a_small_batch_is_gathered_in_the_callers_thread_into_the_same_arrays(monkeypatch):
    """No thread is started for a small batch, and every full batch is handed over in the
    same staging arrays (a plan pointed at them once reads each next batch in place)."""
    gathered_in = []
    gather = BatchFeeder._gather

    def recording(self, step):
        gathered_in.append(threading.current_thread() is threading.main_thread())
        return gather(self, step)

    monkeypatch.setattr(BatchFeeder, "_gather", recording)
    x = np.arange(20, dtype=np.float32).reshape(10, 2)
    feeder = BatchFeeder(x, None, np.arange(10), 4)
    assert not feeder.background
    staged = [(xs[0], xs[0].copy()) for xs, _, _ in feeder.batch_lists()]
    assert all(gathered_in) and len(gathered_in) == 3
    assert staged[0][0] is staged[1][0] and len(staged[2][0]) == 2
    np.testing.assert_array_equal(np.concatenate([copy for _, copy in staged]), x)


def test_a_large_batch_is_gathered_in_the_background(monkeypatch):
    monkeypatch.setattr(feeder_module, "BACKGROUND_BYTES", 4 * 2 * 4 + 4 * 4)  # x and y rows
    x = np.zeros((10, 2), np.float32)
    y = np.zeros((10, 1), np.float32)
    assert BatchFeeder(x, y, np.arange(10), 4).background
    assert not BatchFeeder(x, None, np.arange(10), 4).background
    names = []
    gather = BatchFeeder._gather
    monkeypatch.setattr(BatchFeeder, "_gather", lambda self, step: (
        names.append(threading.current_thread().name), gather(self, step))[1])
    list(BatchFeeder(x, y, np.arange(10), 4).batches())
    assert len(names) == 3 and all(name.startswith("kiln-feeder") for name in names)
