"""Data-parallel fit on two MPI ranks (mpiexec from the `distributed` extra), launched from
here with a timeout: both ranks end with bit-identical weights equal (float32 tolerance) to
one process trained on the same global batches (with BatchNormalization(synchronized=True)
too), logs are global, rank 0's checkpoint loads in
one process, and a failing, killed or mismatched rank ends the whole job with a message naming
the rank (a killed one under plain mpiexec, python -m mpi4py and kiln launch).

The reference runs in this process first: it also fills numba's on-disk cache, so the ranks
load the kernels instead of compiling them twice at once."""

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("mpi4py", reason="the distributed extra is not installed "
                                     "(pip install -e '.[distributed]')")
MPIEXEC = Path(sys.executable).with_name("mpiexec")
if not MPIEXEC.exists():
    pytest.skip(f"no mpiexec beside {sys.executable}: the distributed extra's MPI runtime "
                "is not installed (pip install -e '.[distributed]')", allow_module_level=True)

from kiln import keras  # noqa: E402

sys.path.insert(0, str(Path(__file__).parent))
import data_parallel_script as script  # noqa: E402

SCRIPT = Path(script.__file__)
# one thread per rank, and no network: the ranks talk through shared memory on this host
RANK_ENV = {"OMP_NUM_THREADS": "1", "HYDRA_IFACE": "lo", "UCX_TLS": "self,sm",
            "UCX_NET_DEVICES": "lo"}


def run_ranks(scenario, folder, runner="python", timeout=60):
    """`mpiexec -n 2 python data_parallel_script.py scenario folder` (runner "python"), with
    `python -m mpi4py` ("mpi4py") or as `kiln launch -n 2 data_parallel_script.py ...`
    ("launch"); returns (exit code, output, seconds). On timeout the whole process group is
    killed. TMPDIR is the folder, so the rank watcher's command line names it too."""
    start_line = {"python": [str(MPIEXEC), "-n", "2", sys.executable],
                  "mpi4py": [str(MPIEXEC), "-n", "2", sys.executable, "-m", "mpi4py"],
                  "launch": [sys.executable, "-m", "kiln.cli", "launch", "-n", "2"]}[runner]
    start = time.perf_counter()
    process = subprocess.Popen([*start_line, str(SCRIPT), scenario, str(folder)],
                               env={**os.environ, **RANK_ENV, "TMPDIR": str(folder)},
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                               start_new_session=True)
    try:
        output, _ = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        output, _ = process.communicate()
        pytest.fail(f"{scenario}: the 2-rank job did not end within {timeout} s:\n"
                    f"{output[-3000:]}")
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
    return process.returncode, output, time.perf_counter() - start


def processes_mentioning(text, patience=10.0):
    """Processes whose command line holds `text` (strays of a job) still alive after
    `patience` seconds (a rank MPI_Abort kills may take a moment to go)."""
    deadline = time.perf_counter() + patience
    while True:
        found = []
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit():
                try:
                    command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
                except OSError:
                    continue
                if text in command:
                    found.append(command)
        if not found or time.perf_counter() > deadline:
            return found
        time.sleep(0.2)


@pytest.fixture(scope="module")
def reference():
    model, history = script.train_cnn()
    x, y = script.data()
    return {"weights": model.get_weights(), "history": history.history,
            # in one process synchronized statistics are plain BatchNormalization's
            "sync_bn": script.train_batch_norm(synchronized=True).get_weights(),
            "evaluated": model.evaluate(x, y, batch_size=script.BATCH, verbose=0),
            "predicted": model.predict(x, batch_size=script.BATCH)}


@pytest.fixture(scope="module")
def trained(reference, tmp_path_factory):
    folder = tmp_path_factory.mktemp("data_parallel")
    code, output, _ = run_ranks("train", folder)
    assert code == 0, output[-3000:]
    return folder


def test_ranks_hold_identical_weights_equal_to_one_process(trained, reference):
    ranks = [np.load(trained / f"cnn_rank{rank}.npz") for rank in (0, 1)]
    for index, expected in enumerate(reference["weights"]):
        first, second = (r[f"w{index}"] for r in ranks)
        assert np.array_equal(first, second), f"weight {index} differs between the ranks"
        np.testing.assert_allclose(first, expected, rtol=1e-5, atol=1e-6)
    # logged loss and accuracy are averages over both ranks: the single process's values
    np.testing.assert_allclose(ranks[0]["loss"], reference["history"]["loss"], rtol=1e-5)
    np.testing.assert_allclose(ranks[1]["accuracy"], reference["history"]["accuracy"])
    # evaluate shards and averages, predict shards and gathers (in the global order)
    np.testing.assert_allclose(ranks[1]["evaluated"], reference["evaluated"], rtol=1e-5)
    assert np.array_equal(ranks[0]["predicted"], ranks[1]["predicted"])
    np.testing.assert_allclose(ranks[0]["predicted"], reference["predicted"], atol=1e-5)


def test_batch_norm_model_ends_identical_on_both_ranks(trained):
    ranks = [np.load(trained / f"bn_rank{rank}.npz") for rank in (0, 1)]
    assert len(ranks[0].files) == 7  # kernel, gamma, beta, moving mean / variance, dense
    for name in ranks[0].files:
        assert np.isfinite(ranks[0][name]).all()
        assert np.array_equal(ranks[0][name], ranks[1][name]), f"{name} differs"


def test_synchronized_batch_norm_equals_one_process_on_the_global_batch(trained, reference):
    ranks = [np.load(trained / f"sync_bn_rank{rank}.npz") for rank in (0, 1)]
    for index, expected in enumerate(reference["sync_bn"]):  # moving statistics included
        first, second = (r[f"w{index}"] for r in ranks)
        assert np.array_equal(first, second), f"weight {index} differs between the ranks"
        np.testing.assert_allclose(first, expected, rtol=1e-5, atol=1e-6)
    # per-rank statistics (plain BatchNormalization) train other weights
    plain = np.load(trained / "bn_rank0.npz")
    assert not np.allclose(plain["w0"], ranks[0]["w0"], rtol=1e-5, atol=1e-6)


def test_rank_zero_checkpoint_and_log_load_in_one_process(trained):
    rank0 = np.load(trained / "cnn_rank0.npz")
    model = keras.models.load_model(trained / "cnn.keras")
    for index, weight in enumerate(model.get_weights()):
        assert np.array_equal(weight, rank0[f"w{index}"])
    rows = (trained / "log.csv").read_text().strip().splitlines()
    assert rows[0].split(",")[0] == "epoch" and len(rows) == 3  # one writer: 2 epochs


@pytest.mark.parametrize("scenario, runner", [("raise", "python"), ("raise", "mpi4py"),
                                              ("kill", "python"), ("kill", "mpi4py"),
                                              ("kill", "launch")])
def test_a_failing_rank_ends_the_whole_job(reference, tmp_path, scenario, runner):
    code, output, seconds = run_ranks(scenario, tmp_path, runner, timeout=60)
    assert code != 0
    assert seconds < 30, output[-3000:]
    if scenario == "raise":
        assert "rank 1 of 2 failed with RuntimeError: injected failure at step 3" in output
        assert "without reporting an error" not in output  # the watcher keeps quiet
    else:
        # the killed rank cannot speak: the rank watcher names it (the signal when it could
        # read it before Hydra reaped the rank), the rank its clean-up killed is not blamed
        pid = (tmp_path / "pid1").read_text()
        assert (f"kiln: rank 1 of 2 (pid {pid} on {socket.gethostname()}) was killed by "
                "signal 9 (SIGKILL) without reporting an error" in output
                or f"kiln: rank 1 of 2 (pid {pid} on {socket.gethostname()}) died without "
                "reporting an error (killed by a signal?)" in output), output[-3000:]
        assert "kiln: rank 0 of 2" not in output, output[-3000:]
        # mpiexec names a PID: the killed rank's, or (measured) the one its clean-up killed
        pids = [(tmp_path / f"pid{rank}").read_text() for rank in (0, 1)]
        assert any(f"PID {p} RUNNING" in output for p in pids), output[-3000:]
        assert "Killed (signal 9)" in output, output[-3000:]
    assert processes_mentioning(str(tmp_path)) == []  # ranks and watcher


def test_ranks_of_different_jobs_are_reported_at_start(reference, tmp_path):
    code, output, seconds = run_ranks("mismatch", tmp_path)
    assert code != 0
    assert "the data-parallel ranks do not run the same job" in output
    assert "kiln version: rank(s) [1] differ from rank 0" in output
    assert "model (weights, shapes, layers): rank(s) [1] differ from rank 0" in output
    assert "batch size: rank(s) [1] differ from rank 0 (rank 0: 16, rank 1: 8)" in output
    assert seconds < 30  # reported at start-up, not after a hang
