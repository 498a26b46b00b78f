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

# A run started in the background inherits SIGINT ignored, and Python then installs no handler
# of its own; the Ctrl-C tests are about the handler a foreground process has.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)
