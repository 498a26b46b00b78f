"""numba settings shared by kiln's own kernels (what oneDNN lacks: dropout, loss, optimizers).

numba's OpenMP threading layer uses the same GNU libgomp as the oneDNN wheel, so kiln's kernels
and oneDNN's primitives share one thread pool instead of two pools spin-waiting against each
other on the same cores.
"""

import os

os.environ.setdefault("NUMBA_THREADING_LAYER", "omp")

import numba  # noqa: E402

PARALLEL = dict(parallel=True, fastmath=True, cache=True, nogil=True)
SERIAL = dict(fastmath=True, cache=True, nogil=True)

njit = numba.njit
prange = numba.prange
