"""BatchFeeder yields exactly x[order], y[order] in batches, in aligned buffers."""

import numpy as np

from kiln.runtime.feeder import BatchFeeder


def test_batches_follow_the_order_and_the_last_one_is_smaller():
    rng = np.random.default_rng(0)
    x = rng.random((10, 3, 4), dtype=np.float32)
    y = rng.random((10, 2), dtype=np.float32)
    order = rng.permutation(10)
    seen_x, seen_y = [], []
    for x_batch, y_batch in BatchFeeder(x, y, order, 4).batches():
        assert x_batch.ctypes.data % 64 == 0 and x_batch.flags.c_contiguous
        seen_x.append(x_batch.copy())
        seen_y.append(y_batch.copy())
    assert [len(b) for b in seen_x] == [4, 4, 2]
    np.testing.assert_array_equal(np.concatenate(seen_x), x[order])
    np.testing.assert_array_equal(np.concatenate(seen_y), y[order])


def test_a_yielded_batch_is_not_overwritten_by_the_next_gather():
    x = np.arange(6 * 2, dtype=np.float32).reshape(6, 2)
    y = np.zeros((6, 1), np.float32)
    feeder = BatchFeeder(x, y, np.arange(6), 2)
    for step, (x_batch, _) in enumerate(feeder.batches()):
        expected = x[2 * step:2 * step + 2].copy()
        import time
        time.sleep(0.01)  # give the background gather of the next batch time to run
        np.testing.assert_array_equal(x_batch, expected)


def test_empty_order_yields_nothing():
    x = np.zeros((0, 2), np.float32)
    assert list(BatchFeeder(x, x, np.arange(0), 4).batches()) == []
