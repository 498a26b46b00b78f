"""Kernels read no global whose value depends on the process that runs them.

numba's on-disk cache keys a compiled kernel by its sources and the CPU, and freezes every
global it reads at the value it had when it was compiled. THREADS follows NUMBA_NUM_THREADS
(OMP_NUM_THREADS): the reduction kernels once sized their ranges with it, and a kernel
compiled with 2 threads, loaded by a process running 1, wrote past its one-row scratch and
corrupted the heap (the suite's workers crashed in later, unrelated tests).
"""

import importlib
import pkgutil

import kiln
from kiln.ops.numba_config import numba

PROCESS_DEPENDENT = {"THREADS"}


def kernels():
    for module_info in pkgutil.walk_packages(kiln.__path__, "kiln."):
        if module_info.name in ("kiln.__main__", "kiln.bench.__main__"):
            continue
        module = importlib.import_module(module_info.name)
        for name, value in vars(module).items():
            if isinstance(value, numba.core.registry.CPUDispatcher) \
                    and value.__module__ == module.__name__:
                yield f"{module.__name__}.{name}", value


def test_no_kernel_reads_the_thread_count_as_a_global():
    found = {name: sorted(PROCESS_DEPENDENT & set(kernel.py_func.__code__.co_names))
             for name, kernel in kernels()}
    assert len(found) > 50  # the scan sees kiln's kernels
    assert {name: names for name, names in found.items() if names} == {}

