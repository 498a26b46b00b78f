"""numba settings shared by kiln's own kernels (what oneDNN lacks: dropout, loss, optimizers).

numba's OpenMP threading layer uses the same GNU libgomp as the oneDNN wheel, so kiln's kernels
and oneDNN's primitives share one thread pool instead of two pools spin-waiting against each
other on the same cores.

numba's on-disk cache checks only the modification time of the file a kernel is defined in,
not of the helpers it inlines from other modules (the dropout hash is inlined into the fused
pooling kernel): a cache kept beside the sources can run an old helper after an edit or a
partial update. So the cache lives in a folder named after a hash of kiln's sources, unless
NUMBA_CACHE_DIR is set. That only works if this module imports numba first: the rest of kiln
takes numba from here and never imports it itself (a test checks).
"""

import hashlib
import os
from pathlib import Path


def _source_stamp():
    digest = hashlib.sha256()
    for path in sorted(Path(__file__).resolve().parent.parent.rglob("*.py")):
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def _cache_dir():
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "kiln", "numba", _source_stamp())


os.environ.setdefault("NUMBA_THREADING_LAYER", "omp")


def _threads_from_openmp():
    """NUMBA_NUM_THREADS follows OMP_NUM_THREADS when only the latter is set: numba's kernels
    and oneDNN's primitives share one OpenMP runtime, and parallel regions that alternate
    between a team of OMP_NUM_THREADS (oneDNN) and one of every core (numba) make the
    runtime's idle threads spin against the working ones. Measured with OMP_NUM_THREADS=1 on
    2 cores, two processes training mnist_cnn: 2.6 s a step each, against 70 ms with both set."""
    threads = os.environ.get("OMP_NUM_THREADS", "").split(",")[0].strip()
    if "NUMBA_NUM_THREADS" not in os.environ and threads.isdigit() and int(threads) >= 1:
        os.environ["NUMBA_NUM_THREADS"] = threads


_threads_from_openmp()
os.environ.setdefault("NUMBA_CACHE_DIR", _cache_dir())

import numba  # noqa: E402

# error_model "numpy": a division by zero gives inf or nan as numpy does (a NaN loss the
# trainer and TerminateOnNaN report), where numba's default raises ZeroDivisionError
PARALLEL = dict(parallel=True, fastmath=True, cache=True, nogil=True, error_model="numpy")
SERIAL = dict(fastmath=True, cache=True, nogil=True, error_model="numpy")

njit = numba.njit
prange = numba.prange
get_thread_id = numba.get_thread_id
get_num_threads = numba.get_num_threads
# Threads numba may run (set_num_threads can lower it, never raise it): per-thread scratch rows,
# sized in Python. A kernel never reads THREADS itself: numba's on-disk cache freezes a global
# at the value it had when the kernel was compiled (the cache key holds the sources, not
# NUMBA_NUM_THREADS), so a kernel compiled with 2 threads and loaded by a process with 1
# wrote past its 1-row scratch and corrupted the heap. Kernels take counts from their
# arrays' shapes or from get_num_threads() (a test checks).
THREADS = numba.config.NUMBA_NUM_THREADS
# what a kernel module needs to write an LLVM intrinsic (streaming_stores.py)
intrinsic = numba.extending.intrinsic
types = numba.types
