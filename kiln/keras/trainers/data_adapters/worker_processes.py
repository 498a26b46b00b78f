"""Worker processes for a PyDataset with `use_multiprocessing=True`, as Keras 3 runs them.

Keras 3 starts a pool of `workers` processes at every epoch, shares the dataset with them
through the pool's initializer, runs `dataset[index]` in them and takes the results in index
order. kiln does the same, with these choices:

- The processes are forked (where the platform can fork; elsewhere its default start method
  is used and the dataset is pickled to them). A fork starts each worker from the parent as
  it is when the epoch's batches begin, after `on_epoch_begin` (and the last `on_epoch_end`),
  so whatever those changed is what the workers see; the dataset need not be picklable; and a
  script without an `if __name__ == "__main__":` guard (Keras 2's examples have none) is not
  re-run in every worker as 'spawn' and 'forkserver' would re-run it.
- Fork safety. The parent holds a GNU OpenMP (libgomp) thread pool, shared by oneDNN and
  numba's kernels (kiln/ops/numba_config.py selects numba's 'omp' layer). libgomp is not
  fork-safe: a child that enters an OpenMP parallel region waits for pool threads the fork
  did not copy. A worker therefore runs nothing but the dataset's `__getitem__`: numpy
  (OpenBLAS restarts its threads after a fork) and kiln's augmentation kernels (serial
  numba, no OpenMP) are safe there; a kiln model or a numba parallel kernel is not. numba
  notices a parallel kernel called after a fork and terminates that process; the pool here
  notices the dead worker and fit raises an error naming the batch. That is why this is a
  `concurrent.futures.ProcessPoolExecutor` and not Keras's `multiprocessing.Pool`, which
  would wait for that batch forever.
- Batches come back pickled; the parent checks and stages them as it does a thread's.
"""

import multiprocessing
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool

_dataset = None  # in a worker process: the dataset its pool shares


def _share(dataset):
    """Pool initializer, in each worker: keep the dataset and name the process (the name
    heads whatever the worker prints when it fails)."""
    global _dataset
    _dataset = dataset
    process = multiprocessing.current_process()
    process.name = f"kiln-py-dataset-worker-{process.name}"


def _get_item(index):
    return _dataset[index]


def _context():
    if "fork" in multiprocessing.get_all_start_methods():
        return multiprocessing.get_context("fork")
    return multiprocessing.get_context()


class WorkerProcesses:
    """`workers` processes computing `dataset[index]`, for one epoch's batches.

    The processes are started by the first `submit` (in the calling thread, before the pool
    starts threads of its own) and ended by `close()`.
    """

    def __init__(self, dataset, workers):
        self.name = type(dataset).__name__
        self.executor = ProcessPoolExecutor(max_workers=workers, mp_context=_context(),
                                            initializer=_share, initargs=(dataset,))

    def submit(self, index):
        """A future of `dataset[index]` computed in a worker process."""
        return self.executor.submit(_get_item, int(index))

    def result(self, future, index, where):
        """The batch `future` holds, or its error with the batch named: the dataset's own
        exception (same type, a note added; its traceback in the worker is the cause), or a
        RuntimeError when the worker process died."""
        try:
            return future.result()
        except BrokenProcessPool as error:
            raise RuntimeError(
                f"{where}: the worker process computing {self.name}[{index}] ended abruptly. "
                "With use_multiprocessing=True the workers are forked from a process that "
                "holds OpenMP thread pools, so __getitem__ must not run OpenMP code there (a "
                "kiln model, a numba parallel kernel); use threads (use_multiprocessing="
                "False) for such a dataset") from error
        except Exception as error:
            error.add_note(f"{where}: raised by {self.name}[{index}] in a worker process")
            raise

    def close(self, abort=False):
        """End the processes and wait for them: after their current batch, or at once with
        `abort` (the epoch was left early or failed: nobody wants the batches in flight)."""
        if abort:
            self._terminate()
        self.executor.shutdown(wait=True, cancel_futures=True)

    def _terminate(self):
        terminate = getattr(self.executor, "terminate_workers", None)  # Python >= 3.14
        if terminate is not None:
            terminate()
            return
        # Before 3.14 the executor has no public way to stop a running task.
        for process in list((self.executor._processes or {}).values()):
            if process.is_alive():
                process.terminate()
