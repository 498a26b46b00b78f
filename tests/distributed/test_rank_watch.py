"""The rank watcher (distributed/rank_watch.py) on stand-in ranks, without MPI: it names the first
rank that dies without a word by its rank, pid, host and signal, says nothing when the ranks
marked their ending (a normal exit, or kiln's abort after printing the error), and leaves as
soon as its ranks are gone. (The 2-rank fault tests run it under mpiexec.)"""

import os
import signal
import subprocess
import sys
import time

import pytest

from kiln.distributed import rank_watch

pytestmark = pytest.mark.skipif(not hasattr(os, "pidfd_open"), reason="pidfds are Linux-only")


def stand_ins(count):
    """Processes that sleep, as ranks (this process is their parent: it reaps them)."""
    return [subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
            for _ in range(count)]


def start_watcher(folder, ranks):
    watcher = subprocess.Popen(
        [sys.executable, "-I", "-S", rank_watch.__file__, str(folder), str(len(ranks)),
         "node7", *(f"{rank}:{process.pid}" for rank, process in enumerate(ranks))],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert watcher.stdout.readline() == "watching\n"
    return watcher


def finish(watcher, ranks):
    for process in ranks:
        if process.poll() is None:
            process.kill()
        process.wait()
    _, errors = watcher.communicate(timeout=10)  # it leaves once its ranks are gone
    return errors


def test_a_killed_rank_is_named_by_rank_pid_host_and_signal(tmp_path):
    ranks = stand_ins(3)
    watcher = start_watcher(tmp_path, ranks)
    ranks[1].send_signal(signal.SIGKILL)  # not reaped yet: /proc shows its signal
    time.sleep(0.5)
    errors = finish(watcher, ranks)  # the others die after: Hydra's clean-up, not reported
    assert errors == (f"kiln: rank 1 of 3 (pid {ranks[1].pid} on node7) was killed by signal "
                      "9 (SIGKILL) without reporting an error (by a user, a scheduler or the "
                      "kernel's out-of-memory killer); the MPI job ends\n")
    assert not tmp_path.exists()  # the watcher removes its folder of marks


def test_a_reaped_rank_is_named_with_its_signal_where_the_kernel_keeps_it(tmp_path):
    ranks = stand_ins(2)
    watcher = start_watcher(tmp_path, ranks)
    ranks[0].terminate()
    ranks[0].wait()  # reaped at once, as Hydra does: only a pidfd (Linux 6.15+) still knows
    errors = finish(watcher, ranks)
    who = f"kiln: rank 0 of 2 (pid {ranks[0].pid} on node7)"
    assert errors in (f"{who} was killed by signal 15 (SIGTERM) without reporting an error; "
                      "the MPI job ends\n",
                      f"{who} died without reporting an error (killed by a signal?); the MPI "
                      "job ends\n")


@pytest.mark.parametrize("how", ["exit", "abort"])
def test_marked_endings_are_not_reported(tmp_path, how):
    ranks = stand_ins(2)
    watcher = start_watcher(tmp_path, ranks)
    (tmp_path / "1").write_text(how)
    ranks[1].kill()
    time.sleep(0.3)
    if how == "exit":  # a normal exit of one rank: the other is still watched
        assert watcher.poll() is None
        (tmp_path / "0").write_text("exit")
    assert finish(watcher, ranks) == ""
    assert watcher.returncode == 0


def test_the_rank_whose_fifo_closed_first_is_named_though_another_is_gone_first(tmp_path):
    # Hydra may learn of a death from the dying rank's sockets and kill the others before
    # the dying one's pidfd is ready: the FIFO it held closed first says which one it was
    ranks = stand_ins(2)
    watcher = start_watcher(tmp_path, ranks)
    fifo = os.open(tmp_path / "fifo1", os.O_WRONLY | os.O_NONBLOCK)  # as rank 1 holds it
    os.close(fifo)  # rank 1 begins to die
    time.sleep(0.2)
    ranks[0].kill()  # the clean-up kill, gone first
    time.sleep(0.2)
    ranks[1].kill()
    errors = finish(watcher, ranks)
    assert errors == (f"kiln: rank 1 of 2 (pid {ranks[1].pid} on node7) was killed by signal "
                      "9 (SIGKILL) without reporting an error (by a user, a scheduler or the "
                      "kernel's out-of-memory killer); the MPI job ends\n")
