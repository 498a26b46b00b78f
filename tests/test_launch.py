"""`kiln launch`: threads per rank from cores and ranks per node, and a real 2-rank run of a
tiny script through the environment's mpiexec (skipped without the distributed extra)."""

import os
import re
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from kiln import launch


def test_threads_per_rank_share_the_node_cores():
    assert launch.threads_per_rank(2, cores=2) == 1
    assert launch.threads_per_rank(2, cores=16) == 8
    assert launch.threads_per_rank(3, cores=2) == 1  # never below one
    assert launch.threads_per_rank(8, ppn=2, cores=16) == 8


def test_ranks_per_node_from_a_hostfile(tmp_path):
    hostfile = tmp_path / "hosts"
    hostfile.write_text("# two nodes\nnode1:4\nnode2:4\n\n")
    assert launch.ranks_per_node(8, hostfile=hostfile) == 4
    assert launch.threads_per_rank(8, hostfile=hostfile, cores=32) == 8


def test_launch_runs_the_script_on_every_rank_with_threads_set(tmp_path):
    pytest.importorskip("mpi4py", reason="the distributed extra is not installed "
                                         "(pip install -e '.[distributed]')")
    if not Path(sys.executable).with_name("mpiexec").exists():
        pytest.skip("no mpiexec beside Python: the distributed extra is not installed")
    script = tmp_path / "ranks.py"
    script.write_text(textwrap.dedent("""
        import os
        from mpi4py import MPI
        print(f"rank {MPI.COMM_WORLD.Get_rank()} of {MPI.COMM_WORLD.Get_size()} threads "
              f"{os.environ['OMP_NUM_THREADS']}", flush=True)
    """))
    env = {key: value for key, value in os.environ.items()
           if key not in ("OMP_NUM_THREADS", "NUMBA_NUM_THREADS")}
    env["HYDRA_IFACE"] = "lo"
    process = subprocess.Popen([sys.executable, "-m", "kiln.cli", "launch", "-n", "2",
                                "--threads", "3", str(script)], env=env, text=True,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               start_new_session=True)
    try:
        output, _ = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
    assert process.returncode == 0, output
    # the two ranks' lines may interleave in the one pipe
    assert sorted(re.findall(r"rank \d of \d threads \d", output)) == [
        "rank 0 of 2 threads 3", "rank 1 of 2 threads 3"]
