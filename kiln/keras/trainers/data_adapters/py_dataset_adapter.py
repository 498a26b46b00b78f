"""PyDataset / Sequence: batches fetched by index in worker threads, trained on in order.

`workers` threads call `dataset[index]` for up to `max_queue_size` batches ahead and check and
stage each one; the loop takes them in epoch order, so a run is the same whatever thread
finished first. Threads, not processes: the heavy parts of a batch (numpy, Pillow decoding,
kiln's augmentation kernels) release the GIL, and forking a process that holds OpenMP and
oneDNN thread pools is unsafe, so `use_multiprocessing=True` is refused with an error.
A dataset may offer `_batch_into(index, buffer)`, writing its x straight into the staging
buffer `buffer(shape)` gives it (ImageDataGenerator's iterators do): then nothing is copied.
"""

import random
from collections import deque
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from .array_adapter import positive_int
from .data_adapter import DataAdapter
from .staged_batches import BatchStandardizer, StagingRing


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
        if multiprocessing:
            raise ValueError(f"{owner}: use_multiprocessing=True is not supported: kiln fetches "
                             f"batches of {type(dataset).__name__} in worker threads (set "
                             "use_multiprocessing=False and workers=N; numpy and kiln's "
                             "augmentation kernels run outside the GIL)")
        if isinstance(workers, bool) or not isinstance(workers, (int, np.integer)) \
                or workers < 0:
            raise ValueError(f"{owner}: argument workers must be an int >= 0, got {workers!r}")
        self.workers = int(workers)
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
        self.shuffle = bool(shuffle) and count is not None
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
        if batch_into is not None:
            batch = batch_into(index, lambda shape: self.ring.buffer(slot, ("x", 0), shape))
        else:
            batch = self.dataset[int(index)]
        return self.standardize(batch, slot, where)

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
        pending = deque()
        for step in range(min(adapter.queue_size, count)):
            pending.append(adapter.pool.submit(adapter._fetch, self._index(first + step),
                                               step, step % slots))
        for step in range(count):
            batch = pending.popleft().result()
            ahead = step + len(pending) + 1
            if ahead < count:
                pending.append(adapter.pool.submit(adapter._fetch, self._index(first + ahead),
                                                   ahead, ahead % slots))
            yield batch

    def close(self):
        pass
