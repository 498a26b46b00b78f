"""PyDataset / Sequence: batches fetched by index in worker threads or processes, trained on
in order.

`workers` threads call `dataset[index]` for up to `max_queue_size` batches ahead and check and
stage each one; the loop takes them in epoch order, so a run is the same whatever thread
finished first. Threads are the default because the heavy parts of a batch (numpy, Pillow
decoding, kiln's augmentation kernels) release the GIL. With `use_multiprocessing=True`, as in
Keras 3, `workers` processes compute `dataset[index]` instead (forked at the start of each
epoch's batches: worker_processes.py says why and what may run in them) and the threads only
check and stage what they send back.
A dataset may offer `_batch_into(index, buffer)`, writing its x straight into the staging
buffer `buffer(shape)` gives it (ImageDataGenerator's iterators do): then nothing is copied
(in threads only: a process cannot write into the parent's buffers).
"""

import random
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager

import numpy as np

from .array_adapter import positive_int
from .data_adapter import DataAdapter
from .staged_batches import BatchStandardizer, StagingRing
from .worker_processes import WorkerProcesses


class PyDatasetAdapter(DataAdapter):
    """Args: dataset (a PyDataset); workers / use_multiprocessing / max_queue_size override
    the dataset's own (as fit_generator's arguments do in Keras 2); the rest as
    get_data_adapter."""

    def __init__(self, dataset, steps_per_epoch=None, shuffle=True, class_weight=None,
                 signature=None, workers=None, use_multiprocessing=None, max_queue_size=None):
        owner = signature.owner
        self.dataset = dataset
        workers = dataset.workers if workers is None else workers
        multiprocessing = (dataset.use_multiprocessing if use_multiprocessing is None
                           else use_multiprocessing)
        queue_size = dataset.max_queue_size if max_queue_size is None else max_queue_size
        if isinstance(workers, bool) or not isinstance(workers, (int, np.integer)) \
                or workers < 0:
            raise ValueError(f"{owner}: argument workers must be an int >= 0, got {workers!r}")
        self.workers = int(workers)
        # as Keras: processes only when there is a worker to run (workers=0 fetches in the
        # training thread whatever use_multiprocessing says)
        self.use_processes = bool(multiprocessing) and self.workers > 0
        self.processes = None  # the WorkerProcesses of the epoch being fetched
        self.queue_size = positive_int(queue_size, "max_queue_size", owner)
        count = dataset.num_batches
        if count is None and steps_per_epoch is None:
            raise ValueError(f"{owner}: {type(dataset).__name__} has no length (an endless "
                             "dataset): pass steps_per_epoch")
        if count is not None and count <= 0:
            raise ValueError(f"{owner}: {type(dataset).__name__} has {count} batches; expected "
                             "at least one")
        self.count = self.num_batches = count
        if steps_per_epoch is not None:
            self.steps_per_epoch = positive_int(steps_per_epoch, "steps_per_epoch", owner)
        # a stand-in for a tf.data dataset (timeseries_dataset_from_array's) keeps its order:
        # Keras's fit ignores shuffle for those
        self.shuffle = (bool(shuffle) and count is not None
                        and not getattr(dataset, "keeps_batch_order", False))
        self.ring = StagingRing(self.queue_size + 2)
        self.standardize = BatchStandardizer(signature, self.ring, type(dataset).__name__,
                                             class_weight)
        self.pool = (ThreadPoolExecutor(max_workers=self.workers,
                                        thread_name_prefix="kiln-py-dataset")
                     if self.workers else None)
        self.epoch = -1  # counts batches() calls, for error messages

    def _fetch(self, index, step, slot):
        """Batch `index` of the dataset, checked and staged (in a worker thread)."""
        where = self.standardize.where(self.epoch, step, self.steps)
        batch_into = getattr(self.dataset, "_batch_into", None)
        try:
            if batch_into is not None:
                batch = batch_into(index,
                                   lambda shape: self.ring.buffer(slot, ("x", 0), shape))
            else:
                batch = self.dataset[int(index)]
        except Exception as error:
            error.add_note(f"{where}: raised by {type(self.dataset).__name__}[{index}]")
            raise
        return self.standardize(batch, slot, where)

    def _stage_fetched(self, processes, future, index, step, slot):
        """The batch a worker process computed, checked and staged (in a worker thread)."""
        where = self.standardize.where(self.epoch, step, self.steps)
        return self.standardize(processes.result(future, index, where), slot, where)

    @contextmanager
    def _fetching(self):
        """`submit(index, step, slot)`, giving a future of the staged batch, for one epoch's
        batches. Worker processes are forked here, after the epoch's on_epoch_begin, and
        ended when the batches are done; at once if the epoch was left early or failed."""
        if not self.use_processes:
            yield lambda index, step, slot: self.pool.submit(self._fetch, index, step, slot)
            return
        processes = self.processes = WorkerProcesses(self.dataset, self.workers)
        finished = False
        try:
            yield lambda index, step, slot: self.pool.submit(
                self._stage_fetched, processes, processes.submit(index), index, step, slot)
            finished = True
        finally:
            self.processes = None
            processes.close(abort=not finished)

    def batches(self):
        self.epoch += 1
        return super().batches()

    def _new_pass(self):
        return _IndexPass(self)

    def _source_epoch_begin(self):
        self.dataset.on_epoch_begin()

    def _source_epoch_end(self):
        self.dataset.on_epoch_end()

    def close(self):
        super().close()
        if self.processes is not None:
            self.processes.close(abort=True)
            self.processes = None
        if self.pool is not None:
            self.pool.shutdown(wait=True, cancel_futures=True)


class _IndexPass:
    """The dataset's batches in pass order: 0, 1, ... or, with shuffle, a shuffle of them
    drawn from Python's `random` (as Keras 3, so keras.utils.set_random_seed fixes it) when
    the pass's first batch is asked for; an endless dataset counts on."""

    ended = False  # epochs.py never asks for more batches than a pass has

    def __init__(self, adapter):
        self.adapter, self.indices, self.position = adapter, None, 0

    def _index(self, position):
        if self.indices is None:
            return position  # endless: Keras counts from 0 in each pass
        return self.indices[position]

    def take(self, count):
        adapter = self.adapter
        if self.indices is None and adapter.count is not None:
            self.indices = list(range(adapter.count))
            if adapter.shuffle:
                random.shuffle(self.indices)
        first, slots = self.position, len(adapter.ring.slots)
        self.position += count
        if adapter.pool is None:
            for step in range(count):
                yield adapter._fetch(self._index(first + step), step, step % slots)
            return
        if count == 0:
            return  # no batch: no worker process to start
        with adapter._fetching() as submit:
            pending = deque()
            for step in range(min(adapter.queue_size, count)):
                pending.append(submit(self._index(first + step), step, step % slots))
            for step in range(count):
                batch = pending.popleft().result()
                ahead = step + len(pending) + 1
                if ahead < count:
                    pending.append(submit(self._index(first + ahead), ahead, ahead % slots))
                yield batch

    def close(self):
        pass
