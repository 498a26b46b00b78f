"""Collective communication between the processes of a data-parallel job, through mpi4py.

MPI is the transport (no sockets or parameter server of kiln's own): every call here is a
buffer-based mpi4py call (capital-letter `Allreduce`, `Bcast`, `Allgather`) on numpy arrays,
so nothing is pickled on the hot path. mpi4py is an optional extra (`pip install
'kiln[distributed]'`) and is imported only when a World is made.

The gradients a plan computes already lie in one contiguous arena (plan/parameters.py), the
trainable ones first; `GradientBuckets` cuts that prefix into a few large views and sums each
across the ranks in place with one blocking `Allreduce`. (A non-blocking Iallreduce started
while backward still runs only pays when a spare core or the network card progresses it;
on the machine measured it did not (docs/performance.md, 'Decisions and their measurements'),
so the blocking path is the one used.)
"""

import os
import time

import numpy as np

#: floats per bucket: large enough that MPI runs at bandwidth, small enough to split big models
BUCKET_FLOATS = 4 * 1024 * 1024

# environment variables the common launchers set in every rank they start
LAUNCHER_VARIABLES = ("PMI_RANK", "PMI_SIZE", "PMIX_RANK", "OMPI_COMM_WORLD_SIZE",
                      "HYDI_CONTROL_FD", "MPI_LOCALNRANKS")

INSTALL_HINT = "install the extra: pip install 'kiln[distributed]' (mpi4py and an MPI runtime)"


def launched_by_mpi():
    """Whether this process was started by mpiexec / mpirun (of MPICH or Open MPI)."""
    return any(name in os.environ for name in LAUNCHER_VARIABLES)


def mpi_available():
    try:
        import mpi4py  # noqa: F401
    except ImportError:
        return False
    return True


class World:
    """All the processes of the MPI job (MPI_COMM_WORLD), or a given communicator.

    Keeps the seconds spent in gradient allreduces (`allreduce_seconds`) and how many
    (`allreduce_calls`) so the harness can report them."""

    def __init__(self, comm=None):
        try:
            from mpi4py import MPI
        except ImportError as error:
            raise ImportError(f"data-parallel training needs mpi4py: {INSTALL_HINT}") from error
        self.MPI = MPI
        self.comm = MPI.COMM_WORLD if comm is None else comm
        self.rank = self.comm.Get_rank()
        self.size = self.comm.Get_size()
        node = self.comm.Split_type(MPI.COMM_TYPE_SHARED, key=self.rank)
        self.local_size = node.Get_size()  # ranks on this node
        node.Free()
        self.allreduce_seconds = 0.0
        self.allreduce_calls = 0
        self.wait_seconds = 0.0  # in a Barrier before the allreduce, when `measure_wait`

    # -- collectives on numpy buffers ----------------------------------------------------------
    def broadcast(self, array, root=0):
        """Overwrite `array` (C-contiguous) on every rank with root's values."""
        self.comm.Bcast(array, root=root)
        return array

    def sum_in_place(self, array):
        """`array` (C-contiguous) becomes the sum of every rank's `array`."""
        self.comm.Allreduce(self.MPI.IN_PLACE, array, op=self.MPI.SUM)
        return array

    def start_sum(self, array):
        """Start summing `array` in place without waiting (Iallreduce); returns the request
        whose Wait() completes it. MPI progresses it only inside MPI calls unless the runtime
        has a progress thread or network offload: measure before relying on an overlap."""
        return self.comm.Iallreduce(self.MPI.IN_PLACE, array, op=self.MPI.SUM)

    def all_gather(self, array):
        """A (size, *array.shape) array of every rank's `array` (same shape everywhere)."""
        out = np.empty((self.size, *array.shape), dtype=array.dtype)
        self.comm.Allgather(np.ascontiguousarray(array), out)
        return out

    def gather_rows(self, array, counts):
        """Every rank's `array` (rows first; rank r holds counts[r] rows) concatenated by
        rank, on every rank."""
        row = int(np.prod(array.shape[1:], dtype=np.int64))
        out = np.empty((int(sum(counts)), *array.shape[1:]), dtype=array.dtype)
        sizes = [count * row for count in counts]
        offsets = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64).tolist()
        self.comm.Allgatherv(np.ascontiguousarray(array),
                             [out, (sizes, offsets), self.MPI._typedict[array.dtype.char]])
        return out

    def barrier(self):
        self.comm.Barrier()

    def abort(self, code=1):
        """End every rank of the job now (no hang on a collective another rank never joins).
        The caller has reported the error: the node's rank watcher stays silent."""
        from . import rank_watch

        rank_watch.mark_ended("abort")
        self.comm.Abort(code)


class GradientBuckets:
    """Sums the trainable gradients of a ParameterStore across the ranks, in place.

    Args:
        world: the World.
        store: the model's ParameterStore (its arenas are read at each call: a repacking
            after a new plan moves them).
        bucket_floats: floats per Allreduce.

    `weight` (set before each step) scales this rank's gradients before the sum: each rank's
    loss is a mean over its own shard, so weighting it by shard / global batch makes the sum
    the mean over the global batch, as a single process computes it.
    """

    #: the harness sets it: a Barrier first, timed apart, so the allreduce time is the
    #: transfer alone and the barrier's is the wait for the slowest rank
    measure_wait = False

    def __init__(self, world, store, bucket_floats=BUCKET_FLOATS):
        self.world = world
        self.store = store
        self.bucket_floats = int(bucket_floats)
        self.weight = 1.0 / world.size
        self._arena = None
        self._buckets = ()

    def buckets(self):
        """Contiguous views of the arena's trainable prefix, at most bucket_floats each."""
        store = self.store
        key = (id(store.grads_arena), store.trainable_size)
        if key != self._arena:
            prefix = store.grads_arena[:store.trainable_size]
            self._buckets = tuple(prefix[start:start + self.bucket_floats]
                                  for start in range(0, len(prefix), self.bucket_floats))
            self._arena = key
        return self._buckets

    def __call__(self):
        world = self.world
        if self.measure_wait:
            start = time.perf_counter()
            world.barrier()
            world.wait_seconds += time.perf_counter() - start
        start = time.perf_counter()
        for bucket in self.buckets():
            if self.weight != 1.0:
                bucket *= np.float32(self.weight)
            world.sum_in_place(bucket)
        world.allreduce_seconds += time.perf_counter() - start
        world.allreduce_calls += 1
