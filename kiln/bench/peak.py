"""The machine's practical f32 matmul peak, measured in the same run as the model steps."""

import ctypes
import time

import numpy as np

from ..binding.library import lib


def sgemm_gflops(size=2048, repeats=7):
    """Median GFLOP/s of oneDNN's sgemm on square `size` matrices (after one warm-up)."""
    a = np.random.default_rng(0).random((size, size), dtype=np.float32)
    b = np.random.default_rng(1).random((size, size), dtype=np.float32)
    c = np.zeros((size, size), dtype=np.float32)

    def run():
        status = lib.dnnl_sgemm(b"N", b"N", size, size, size, 1.0,
                                ctypes.c_void_p(a.ctypes.data), size,
                                ctypes.c_void_p(b.ctypes.data), size, 0.0,
                                ctypes.c_void_p(c.ctypes.data), size)
        if status != 0:
            raise RuntimeError(f"dnnl_sgemm failed with status {status}")

    run()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return 2.0 * size ** 3 / float(np.median(times)) / 1e9
