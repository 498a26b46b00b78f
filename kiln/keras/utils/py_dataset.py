"""PyDataset (Keras 2's Sequence): a dataset that returns whole batches by index.

Because every batch has an index, fit can fetch several at once in worker threads (or
processes) and still train on them in order, exactly once each per epoch (a generator gives no
such guarantee).
`workers`, `use_multiprocessing` and `max_queue_size` configure how fit fetches; iterating
over the dataset by hand uses none of them.
"""

import itertools
import warnings


class PyDataset:
    """Base class for datasets written in Python, as `keras.utils.PyDataset`.

    Implement `__len__` (batches per epoch) and `__getitem__(index)` returning a batch: x,
    (x,), (x, y) or (x, y, sample_weight). Optionally `on_epoch_begin` / `on_epoch_end`.

    Args:
        workers: threads (or processes) fit uses to fetch batches ahead (0: fetch in the
            training thread).
        use_multiprocessing: `workers` processes instead of threads, forked at each epoch
            from the training process as it is then; their `__getitem__` must not run
            OpenMP code (a kiln model, a numba parallel kernel). Threads suffice for numpy,
            Pillow and kiln's augmentation kernels, which release the GIL.
        max_queue_size: batches fetched ahead at most.

    Example:

        class Batches(keras.utils.PyDataset):
            def __init__(self, x, y, batch_size, **kwargs):
                super().__init__(**kwargs)
                self.x, self.y, self.batch_size = x, y, batch_size

            def __len__(self):
                return -(-len(self.x) // self.batch_size)

            def __getitem__(self, index):
                part = slice(index * self.batch_size, (index + 1) * self.batch_size)
                return self.x[part], self.y[part]
    """

    def __init__(self, workers=1, use_multiprocessing=False, max_queue_size=10):
        self._workers = workers
        self._use_multiprocessing = use_multiprocessing
        self._max_queue_size = max_queue_size

    def _warn_if_super_not_called(self):
        missing = [name for name in ("_workers", "_use_multiprocessing", "_max_queue_size")
                   if not hasattr(self, name)]
        if missing:
            self._workers = getattr(self, "_workers", 1)
            self._use_multiprocessing = getattr(self, "_use_multiprocessing", False)
            self._max_queue_size = getattr(self, "_max_queue_size", 10)
            warnings.warn(f"{type(self).__name__} should call super().__init__(**kwargs) in its "
                          "constructor (kwargs may hold workers, use_multiprocessing, "
                          "max_queue_size)", stacklevel=3)

    @property
    def workers(self):
        self._warn_if_super_not_called()
        return self._workers

    @workers.setter
    def workers(self, value):
        self._workers = value

    @property
    def use_multiprocessing(self):
        self._warn_if_super_not_called()
        return self._use_multiprocessing

    @use_multiprocessing.setter
    def use_multiprocessing(self, value):
        self._use_multiprocessing = value

    @property
    def max_queue_size(self):
        self._warn_if_super_not_called()
        return self._max_queue_size

    @max_queue_size.setter
    def max_queue_size(self, value):
        self._max_queue_size = value

    def __getitem__(self, index):
        raise NotImplementedError(f"{type(self).__name__} must implement __getitem__(index)")

    @property
    def num_batches(self):
        """Batches per epoch (None: an endless dataset); `__len__` by default."""
        if hasattr(self, "__len__"):
            return len(self)
        raise NotImplementedError(f"{type(self).__name__} must implement __len__ or "
                                  "num_batches")

    def __iter__(self):
        count = self.num_batches
        for index in itertools.count() if count is None else range(count):
            yield self[index]

    def on_epoch_begin(self):
        """Called at the start of every epoch of fit."""

    def on_epoch_end(self):
        """Called at the end of every epoch of fit."""


# Keras 2's name for the same class.
Sequence = PyDataset
