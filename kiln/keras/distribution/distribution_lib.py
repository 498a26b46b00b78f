"""keras.distribution's data-parallel spelling over MPI processes.

    keras.distribution.set_distribution(keras.distribution.DataParallel())

is the one line that makes an ordinary training script data-parallel under
`mpiexec -n N python train.py` (or `kiln launch -n N train.py`): every rank of the MPI world
holds a replica of the model, reads its own shard of every global batch, and the gradients
are summed across ranks before each optimizer update (see data_parallel_loop.py and
distributed/collective.py). Started without mpiexec, the same script runs as one process, with or
without mpi4py installed.

Once data-parallel is on across several ranks, an uncaught exception on any rank prints the
rank and the error and aborts the whole MPI job (MPI_Abort), so the other ranks do not hang
in a collective the failed rank will never join.
A rank killed by a signal cannot speak: a watcher process per node
(distributed/rank_watch.py) names it by its rank.
"""

import ctypes
import os
import sys
import traceback

from ...distributed import collective, rank_watch

_state = {"distribution": None}


class SingleProcess:
    """The world of a script started without mpiexec (and perhaps without mpi4py)."""

    rank, size, local_size = 0, 1, 1
    allreduce_seconds, allreduce_calls = 0.0, 0


def _make_world():
    if collective.mpi_available():
        return collective.World()
    if collective.launched_by_mpi():
        raise ImportError(f"DataParallel: this process was started by mpiexec but mpi4py is "
                          f"not installed; {collective.INSTALL_HINT}")
    return SingleProcess()


def list_devices(device_type=None):
    """The ranks of the MPI world as device names ('cpu:<rank>'), as Keras lists devices."""
    if device_type not in (None, "cpu", "CPU"):
        raise ValueError(f"list_devices: argument device_type must be 'cpu' or None (kiln "
                         f"runs on CPUs), got {device_type!r}")
    world = _state["distribution"].world if _state["distribution"] else _make_world()
    return [f"cpu:{rank}" for rank in range(world.size)]


def get_device_count(device_type=None):
    return len(list_devices(device_type))


class DataParallel:
    """Data-parallel training over all ranks of the MPI world (keras.distribution.DataParallel).

    Args:
        device_mesh, devices: Keras' ways of choosing devices; kiln always uses every rank of
            the MPI world (how many is chosen by `mpiexec -n N`), so both must stay None.
        auto_shard_dataset: True (Keras' default): each rank reads its own shard of every
            global batch. False is refused: kiln does not take per-rank datasets yet.

    `fit(batch_size=B)` keeps B as the global batch (as Keras 3's DataParallel): each of N
    ranks runs B / N samples per step.
    """

    def __init__(self, device_mesh=None, devices=None, auto_shard_dataset=True):
        if device_mesh is not None or devices is not None:
            raise ValueError("DataParallel: arguments device_mesh and devices must be None; "
                             "kiln trains on every rank of the MPI world (choose how many "
                             "with mpiexec -n N or kiln launch -n N)")
        if auto_shard_dataset is not True:
            raise ValueError(f"DataParallel: argument auto_shard_dataset must be True (each "
                             f"rank reads its shard of the global batch), got "
                             f"{auto_shard_dataset!r}")
        self.auto_shard_dataset = True
        self.world = _make_world()
        self.batch_dim_name = "batch"

    @property
    def num_model_replicas(self):
        return self.world.size

    @property
    def rank(self):
        return self.world.rank

    @property
    def is_distributed(self):
        return self.world.size > 1

    def __repr__(self):
        return f"<DataParallel rank {self.world.rank} of {self.world.size}>"


def set_distribution(value):
    """Make `value` (a DataParallel, or None for one process) the global distribution."""
    if value is not None and not isinstance(value, DataParallel):
        raise ValueError(f"set_distribution: argument value must be a "
                         f"keras.distribution.DataParallel or None, got {value!r}")
    _state["distribution"] = value
    if value is not None and value.is_distributed:
        _threads_per_rank(value.world)
        _abort_on_uncaught_exception(value.world)
        rank_watch.start(value.world.comm)  # names a rank killed without a word


def distribution():
    """The global distribution set by set_distribution (None: one process)."""
    return _state["distribution"]


def _threads_per_rank(world):
    """Without OMP_NUM_THREADS (kiln launch sets it), share the node's cores among its
    ranks: two ranks each running all cores' threads would slow both down."""
    if "OMP_NUM_THREADS" in os.environ:
        return
    threads = max(1, (os.cpu_count() or 1) // world.local_size)
    try:
        ctypes.CDLL("libgomp.so.1").omp_set_num_threads(threads)
    except (OSError, AttributeError):
        pass
    from ...ops import numba_config  # numba comes from there only (its cache folder)

    numba_config.numba.set_num_threads(min(threads, numba_config.THREADS))


def _abort_on_uncaught_exception(world):
    if getattr(sys.excepthook, "_kiln_world", None) is world:
        return
    previous = sys.excepthook

    def abort(kind, error, trace):
        message = "".join(traceback.format_exception(kind, error, trace))
        sys.stderr.write(f"{message}kiln: rank {world.rank} of {world.size} failed with "
                         f"{kind.__name__}: {error}; aborting every rank of the MPI job\n")
        sys.stderr.flush()
        if kind is KeyboardInterrupt:
            previous(kind, error, trace)
        world.abort(1)

    abort._kiln_world = world
    sys.excepthook = abort
