"""Generator and PyDataset adapters: order, staging, threads, epochs, and bad batches caught
with the epoch, the batch, the argument and the expected shape before the loop gets them."""

import random
import threading
import time

import numpy as np
import pytest

from kiln.keras.preprocessing.image import ImageDataGenerator
from kiln.keras.trainers.data_adapters import ModelSignature, get_data_adapter
from kiln.keras.utils import PyDataset, Sequence

SIGNATURE = ModelSignature(input_shapes=[(2, 3)], output_shapes=[(1,)])


def batch(i, size=4):
    return np.full((size, 2, 3), i, np.float64), np.full((size, 1), i)


def epoch_values(adapter):
    values = []
    for xs, ys, weights in adapter.batches():
        assert xs[0].dtype == np.float32 and xs[0].ctypes.data % 64 == 0
        values.append((float(xs[0][0, 0, 0]), float(ys[0][0, 0]), weights))
    return values


def test_generator_with_steps_per_epoch_continues_across_epochs():
    adapter = get_data_adapter((batch(i) for i in range(100)), steps_per_epoch=3,
                               signature=SIGNATURE)
    assert [v for v, _, _ in epoch_values(adapter)] == [0, 1, 2]
    assert [v for v, _, _ in epoch_values(adapter)] == [3, 4, 5]
    adapter.close()


def test_generator_without_steps_runs_to_its_end_then_replays_the_peeked_batches():
    """As Keras 3: every pass ends with its warning; a new pass replays the two batches
    Keras's adapter peeked at, then finds the generator empty."""
    adapter = get_data_adapter((batch(i) for i in range(5)), signature=SIGNATURE)
    assert adapter.steps is None
    with pytest.warns(UserWarning, match="^Your input ran out of data; interrupting training"):
        assert [v for v, _, _ in epoch_values(adapter)] == [0, 1, 2, 3, 4]
    with pytest.warns(UserWarning, match="^Your input ran out of data"):
        assert [v for v, _, _ in epoch_values(adapter)] == [0, 1]
    adapter.close()


def test_generator_shorter_than_steps_cuts_the_epoch_short_with_a_warning():
    adapter = get_data_adapter((batch(i) for i in range(4)), steps_per_epoch=3,
                               signature=SIGNATURE)
    assert [v for v, _, _ in epoch_values(adapter)] == [0, 1, 2]
    with pytest.warns(UserWarning, match="^Your input ran out of data"):
        assert [v for v, _, _ in epoch_values(adapter)] == [3]
    with pytest.warns(UserWarning, match="^Your input ran out of data"):
        assert [v for v, _, _ in epoch_values(adapter)] == [0, 1]
    adapter.close()


def test_an_empty_generator_is_refused_naming_the_argument():
    adapter = get_data_adapter(iter([]), signature=SIGNATURE)
    with pytest.raises(ValueError, match=r"fit: argument x is a generator that yielded no "
                                         r"batch; it must yield at least one"):
        adapter.reset()


def bad_in_epoch_3(kind):
    """Batches of 4; the second batch of the third epoch (batch 8 overall) is bad."""
    def make(i):
        x, y = batch(i)
        if i == 7:
            if kind == "shape":
                x = np.zeros((4, 3, 2))
            elif kind == "dtype":
                x = np.array([["a"] * 3] * 2 * 4).reshape(4, 2, 3)
            elif kind == "nan":
                x[2, 1, 0] = np.nan
            elif kind == "inf":
                y = y.astype(np.float32)
                y[1, 0] = np.inf
        return x, y
    return make


@pytest.mark.parametrize("kind, pattern", [
    ("shape", r"fit: epoch 3, batch 2 of 3 from the generator: argument x must have shape "
              r"\(batch, 2, 3\), got \(4, 3, 2\)"),
    ("dtype", r"epoch 3, batch 2 of 3 from the generator: argument x must be a numeric array"
              r" \(float or int\), got dtype <U1"),
    ("nan", r"epoch 3, batch 2 of 3 from the generator: argument x holds nan at index "
            r"\(2, 1, 0\) \(sample 2\); expected finite numbers"),
    ("inf", r"epoch 3, batch 2 of 3 from the generator: argument y holds inf"),
])
def test_a_bad_generator_batch_in_epoch_3_is_named_before_the_loop_sees_it(kind, pattern):
    make = bad_in_epoch_3(kind)
    adapter = get_data_adapter((make(i) for i in range(100)), steps_per_epoch=3,
                               signature=SIGNATURE)
    epoch_values(adapter)
    epoch_values(adapter)
    seen = []
    with pytest.raises(ValueError, match=pattern):
        for xs, _, _ in adapter.batches():
            seen.append(float(xs[0][0, 0, 0]))
    assert seen == [6.0]  # the good batch before it, not the bad one
    adapter.close()


class Batches(PyDataset):
    def __init__(self, count=6, delay=0.0, **kwargs):
        super().__init__(**kwargs)
        self.count, self.delay = count, delay
        self.ends, self.begins = 0, 0
        self.threads = set()

    def __len__(self):
        return self.count

    def __getitem__(self, index):
        self.threads.add(threading.get_ident())
        time.sleep(self.delay * ((index * 7) % 3))  # finish out of order
        return batch(index)

    def on_epoch_begin(self):
        self.begins += 1

    def on_epoch_end(self):
        self.ends += 1


def test_py_dataset_workers_fetch_in_threads_and_the_loop_sees_epoch_order():
    dataset = Batches(delay=0.01, workers=3, max_queue_size=4)
    adapter = get_data_adapter(dataset, shuffle=False, signature=SIGNATURE)
    assert adapter.steps == 6
    assert [v for v, _, _ in epoch_values(adapter)] == [0, 1, 2, 3, 4, 5]
    assert threading.get_ident() not in dataset.threads and len(dataset.threads) > 1
    assert [v for v, _, _ in epoch_values(adapter)] == [0, 1, 2, 3, 4, 5]
    assert dataset.begins == 2 and dataset.ends == 2
    adapter.close()


def test_py_dataset_shuffles_batch_order_from_pythons_random_as_keras():
    dataset = Batches(workers=2)
    random.seed(4)
    order = [v for v, _, _ in epoch_values(get_data_adapter(dataset, signature=SIGNATURE))]
    random.seed(4)
    expected = list(range(6))
    random.shuffle(expected)
    assert order == expected


def test_py_dataset_with_zero_workers_runs_in_the_calling_thread():
    dataset = Batches(workers=0)
    adapter = get_data_adapter(dataset, shuffle=False, steps_per_epoch=2, signature=SIGNATURE)
    assert [v for v, _, _ in epoch_values(adapter)] == [0, 1]
    assert dataset.threads == {threading.get_ident()}


def test_multiprocessing_is_refused_for_a_generator_with_the_reason():
    """A PyDataset may use processes (test_py_dataset_worker_processes.py); a generator
    cannot be shared between them."""
    with pytest.raises(ValueError, match="use_multiprocessing=True is not supported for a "
                                         "generator"):
        get_data_adapter((batch(i) for i in range(3)), use_multiprocessing=True,
                         signature=SIGNATURE)


def test_sequence_is_py_dataset_and_class_weight_becomes_sample_weight():
    assert Sequence is PyDataset
    adapter = get_data_adapter(Batches(count=2), shuffle=False, class_weight={1: 5.0},
                               signature=SIGNATURE)
    values = epoch_values(adapter)
    np.testing.assert_array_equal(values[0][2][0], np.ones(4))
    np.testing.assert_array_equal(values[1][2][0], np.full(4, 5.0))


def test_y_with_a_py_dataset_is_refused():
    with pytest.raises(ValueError, match="when x is a PyDataset, argument y must not be given"):
        get_data_adapter(Batches(), np.zeros(3), signature=SIGNATURE)


def test_image_iterators_write_straight_into_the_staging_buffers():
    x = np.random.default_rng(0).random((10, 4, 4, 3)).astype(np.float32)
    iterator = ImageDataGenerator(horizontal_flip=True).flow(x, np.zeros((10, 1)),
                                                             batch_size=4, seed=2)
    iterator.workers = 2
    adapter = get_data_adapter(iterator, shuffle=False,
                               signature=ModelSignature(input_shapes=[(4, 4, 3)]))
    # taken before: the iterator reshuffles in on_epoch_end, which ends the pass
    expected = [iterator[step][0] for step in range(3)]
    staged = {}
    for step, (xs, _, _) in enumerate(adapter.batches()):
        staged[step] = xs[0].copy()
        held = adapter.ring.slots[step % len(adapter.ring.slots)][("x", 0)]
        assert xs[0].ctypes.data == held.ctypes.data  # the ring buffer itself, no copy
    for step in range(3):
        np.testing.assert_array_equal(staged[step], expected[step])
    adapter.close()


def test_staging_buffers_are_reused_for_batches_of_other_shapes():
    """Batches of changing lengths (a model with None axes) reuse one aligned buffer per slot
    once the largest was seen: no allocation per batch."""
    from kiln.keras.trainers.data_adapters.staged_batches import StagingRing

    ring = StagingRing(1)
    first = ring.stage(0, ("x", 0), np.ones((4, 12, 3), np.float32))
    for shape in ((4, 7, 3), (2, 12, 3), (4, 5, 6)):
        staged = ring.stage(0, ("x", 0), np.full(shape, 2.0, np.float32))
        assert staged.shape == shape and staged.flags.c_contiguous
        assert staged.ctypes.data == first.ctypes.data and staged.ctypes.data % 64 == 0
        np.testing.assert_array_equal(staged, 2.0)
