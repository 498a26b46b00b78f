"""Suite-wide defaults, so plain `pytest` runs what `make test` and .ci/run run.

The real datasets (the CIFAR-10 sample, MNIST) live in a shared data folder beside the
checkout when one is there; the Makefile and .ci/run point KILN_DATASETS at it unless it is
set. This does the same when the suite is started with pytest directly. It runs when pytest
loads this file, before any test module is imported: several read KILN_DATASETS at import.
"""

import os
import signal
from pathlib import Path

SHARED_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"

if not os.environ.get("KILN_DATASETS") and SHARED_DATA.is_dir():
    os.environ["KILN_DATASETS"] = str(SHARED_DATA)

# Each xdist worker (make test runs two) uses its share of the cores: two processes each
# running an OpenMP team of every core spin against each other (mnist_cnn's training step on
# 2 cores: 36 ms alone, 270 ms each when two such processes run, 70 ms each with one thread
# apiece). Set before kiln (numba, oneDNN) is imported; numba follows OMP_NUM_THREADS.
# tests/runtime/test_threads.py runs the parallel kernels with two threads in a subprocess.
_WORKERS = os.environ.get("PYTEST_XDIST_WORKER_COUNT", "")
if os.environ.get("PYTEST_XDIST_WORKER") and _WORKERS.isdigit() \
        and "OMP_NUM_THREADS" not in os.environ:
    os.environ["OMP_NUM_THREADS"] = str(max(1, (os.cpu_count() or 1) // int(_WORKERS)))

# A run started in the background inherits SIGINT ignored, and Python then installs no handler
# of its own; the Ctrl-C tests are about the handler a foreground process has.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)
