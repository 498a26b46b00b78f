"""PyDataset with use_multiprocessing=True: `workers` processes compute the batches (as Keras 3
does), the model trains on them in order exactly as with one thread, an error in a worker
reaches fit naming the batch, a worker that dies is reported instead of waited for, and no
process outlives the epoch."""

import multiprocessing
import os
import time

import numpy as np
import pytest

from kiln import keras
from kiln.keras.layers import Dense, Flatten
from kiln.keras.preprocessing.image import ImageDataGenerator
from kiln.keras.trainers.data_adapters import ModelSignature, get_data_adapter
from kiln.keras.trainers.data_adapters.batch_checks import first_non_finite
from kiln.keras.utils import PyDataset

pytestmark = pytest.mark.usefixtures("kiln_keras_env")

RNG = np.random.default_rng(0)
X = RNG.standard_normal((48, 4, 4, 1)).astype(np.float32)
Y = np.eye(3, dtype=np.float32)[RNG.integers(0, 3, 48)]
# A worker's pid, epoch and index reach the test through a pipe the fork inherits.
CALLS = multiprocessing.get_context("fork").SimpleQueue()


def model():
    keras.utils.set_random_seed(1)
    net = keras.Sequential([Flatten(input_shape=(4, 4, 1)), Dense(8, activation="relu"),
                            Dense(3, activation="softmax")])
    net.compile(optimizer=keras.optimizers.SGD(0.1), loss="categorical_crossentropy")
    return net


class Batches(PyDataset):
    """Three batches of 16 whose values change with each on_epoch_end, so a worker that did
    not see the parent's latest state would train on the wrong numbers."""

    def __init__(self, fail_at=None, **kwargs):
        super().__init__(**kwargs)
        self.epoch, self.fail_at = 0, fail_at

    def __len__(self):
        return 3

    def __getitem__(self, index):
        CALLS.put((os.getpid(), self.epoch, index))
        if index == self.fail_at:
            raise KeyError(f"no batch {index}")
        part = slice(16 * index, 16 * (index + 1))
        return X[part] * (1.0 + 0.5 * self.epoch), Y[part]

    def on_epoch_end(self):
        self.epoch += 1


def drain_calls():
    calls = []
    while not CALLS.empty():
        calls.append(CALLS.get())
    return calls


def assert_no_process_left(pids):
    assert multiprocessing.active_children() == []
    for pid in pids:
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)


def test_two_processes_train_to_the_weights_of_one_thread():
    drain_calls()
    threads = model()
    threads.fit(Batches(workers=1), epochs=3, validation_data=Batches(workers=1), verbose=0)
    thread_calls = drain_calls()
    processes = model()
    history = processes.fit(Batches(workers=2, use_multiprocessing=True), epochs=3,
                            validation_data=Batches(workers=2, use_multiprocessing=True),
                            verbose=0)
    calls = drain_calls()
    for left, right in zip(threads.get_weights(), processes.get_weights(), strict=True):
        np.testing.assert_array_equal(left, right)
    assert len(history.history["val_loss"]) == 3
    # the same batches of the same epochs (each epoch forked anew, after on_epoch_end) ...
    assert sorted((e, i) for _, e, i in calls) == sorted((e, i) for _, e, i in thread_calls)
    # ... computed in two other processes, where the threads ran in this one
    pids = {pid for pid, _, _ in calls}
    assert os.getpid() not in pids and len(pids) >= 2
    assert {pid for pid, _, _ in thread_calls} == {os.getpid()}
    assert_no_process_left(pids)
    # evaluate and predict run in processes too, with the same results as in the thread
    def in_processes():
        return Batches(workers=2, use_multiprocessing=True)
    expected = threads.predict(Batches(workers=0), verbose=0), threads.evaluate(Batches(),
                                                                               verbose=0)
    drain_calls()
    assert (processes.evaluate(in_processes(), verbose=0)) == expected[1]
    np.testing.assert_array_equal(processes.predict(in_processes(), verbose=0), expected[0])
    pids = {pid for pid, _, _ in drain_calls()}
    assert os.getpid() not in pids
    assert_no_process_left(pids)


def test_an_error_in_a_worker_reaches_fit_naming_the_batch():
    drain_calls()
    net = model()
    with pytest.raises(KeyError, match=r"no batch 2(.|\n)*fit: epoch 1, batch \d of 3 from the "
                                       r"Batches: raised by Batches\[2\] in a worker process"):
        net.fit(Batches(fail_at=2, workers=2, use_multiprocessing=True), epochs=2,
                shuffle=False, verbose=0)
    assert_no_process_left({pid for pid, _, _ in drain_calls()})


class CallsOpenMP(Batches):
    def __getitem__(self, index):
        first_non_finite(np.ones(1 << 16, np.float32), parallel=True)
        return super().__getitem__(index)


def test_a_worker_killed_for_running_openmp_is_reported_not_waited_for():
    """numba terminates a forked child that calls a parallel kernel after the parent used
    OpenMP; fit must say so, not wait for that batch forever."""
    first_non_finite(np.ones(1 << 16, np.float32), parallel=True)  # the parent uses OpenMP
    drain_calls()
    with pytest.raises(RuntimeError, match=r"fit: epoch 1, batch 1 of 3 from the CallsOpenMP: "
                                           r"the worker process computing CallsOpenMP\[0\] "
                                           r"ended abruptly(.|\n)*must not run OpenMP code"):
        model().fit(CallsOpenMP(workers=2, use_multiprocessing=True), shuffle=False,
                    verbose=0)
    assert_no_process_left({pid for pid, _, _ in drain_calls()})


def test_augmented_fit_generator_in_processes_equals_threads():
    """Keras 2's cifar10_cnn spelling; the augmentation kernels run in the forked workers."""
    def train(**workers):
        net = model()
        datagen = ImageDataGenerator(width_shift_range=0.1, height_shift_range=0.1,
                                     horizontal_flip=True, rotation_range=10)
        with pytest.warns(DeprecationWarning):
            net.fit_generator(datagen.flow(X, Y, batch_size=16, seed=5), epochs=2,
                              max_queue_size=3, verbose=0, **workers)
        return net.get_weights()
    for left, right in zip(train(workers=2), train(workers=2, use_multiprocessing=True),
                           strict=True):
        np.testing.assert_array_equal(left, right)
    assert multiprocessing.active_children() == []


class Slow(PyDataset):
    def __len__(self):
        return 6

    def __getitem__(self, index):
        CALLS.put((os.getpid(), 0, index))
        time.sleep(0.2)
        return np.full((4, 2), index, np.float32), np.zeros((4, 1), np.float32)


def test_closing_an_adapter_mid_epoch_leaves_no_worker():
    drain_calls()
    adapter = get_data_adapter(Slow(workers=2, use_multiprocessing=True, max_queue_size=4),
                               shuffle=False, signature=ModelSignature(input_shapes=[(2,)]))
    batches = adapter.batches()
    xs, _, _ = next(batches)
    assert xs[0][0, 0] == 0
    adapter.close()
    batches.close()
    assert_no_process_left({pid for pid, _, _ in drain_calls()})
