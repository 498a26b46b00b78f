"""Name a rank that dies without a word (SIGKILL, the OOM killer, a crash) by its rank number.

A rank that raises says who it is (the excepthook of distribution_lib). A rank that is killed
cannot, and the others cannot either. Measured with MPICH 5.0.2's Hydra (figures in
docs/performance.md, 'Decisions and their measurements'): the proxy that started the ranks
notices the death at once (SIGCHLD; holding the dead rank's stdout and stderr open delays
nothing) and right after sends SIGKILL to every other rank's process group: no SIGTERM
first, no grace period, no MPI call returns an error. So no signal handler and no thread
inside a surviving rank gets to run. And mpiexec's own report ("BAD TERMINATION ... PID 1234
RUNNING AT host ... Killed (signal 9)") names a PID, not a rank, and not always the killed
one: in some runs it named the surviving rank its clean-up had killed. So `kiln launch`
cannot translate that PID into the rank either.

The watching is done from outside the ranks instead. At data-parallel start-up the ranks of
each node exchange their PIDs and the node's first rank starts one small watcher process
(this file run as a script, standard library only) in a session of its own, which Hydra's
clean-up does not kill; the ranks go on once it watches. It sleeps in epoll (no polling: the
training step pays nothing) on a pidfd per rank of its node and on a FIFO per rank whose
write end the rank holds open, and when a rank dies without having marked its ending (a
normal exit marks it at exit, kiln's MPI_Abort before aborting), writes on stderr

    kiln: rank 1 of 2 (pid 1234 on host) was killed by signal 9 (SIGKILL) without reporting
    an error ...

Only the rank that began to die first is reported: the later ones are Hydra's clean-up. The
order is epoll's: it hands the ready descriptors back in the order they became ready, so a
watcher scheduled late on a loaded machine still sees the killed rank first. The pidfds
alone were not enough: on a loaded machine, poll() or epoll on pidfds sometimes named a rank
Hydra had killed (that rank's pidfd was ready before the killed one's; presumably Hydra learnt
of the death from the rank's sockets, which close before the process is fully gone). A rank's
FIFO closes at that same early point of its exit, before Hydra can react: with it, every run
named the killed rank.
The watcher inherits the first rank's stderr, a pipe Hydra reads until every writer has
closed it, so the line goes out through mpiexec whichever way the job was started (`kiln
launch`, `mpiexec python script.py`, `mpiexec python -m mpi4py script.py`); the watcher
leaves as soon as the last rank of its node is gone, and mpiexec with it. The signal is read
from the dead rank's /proc entry while it is a zombie or, once Hydra has reaped it (within
milliseconds), from its pidfd (PIDFD_INFO_EXIT, Linux 6.15 and later); on older kernels it
is often gone before the watcher looks ("killed by a signal?").

Each node's watcher sees only its own node's ranks: on several nodes, a rank killed on node B
is named by node B's watcher, but the ranks Hydra then kills on the other nodes look to their
own watchers like ranks that died without a word, and are reported too.
"""

import fcntl
import os
import select
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time

#: how long the watcher stays after a reported death for the rest of its ranks to go
LINGER_SECONDS = 10.0
#: how long a rank whose FIFO closed may take to be gone before another dead rank is named
DYING_SECONDS = 1.0

_state = {"folder": None, "rank": None, "comm": None, "watcher": None, "fifo": None}


# -- in the ranks ------------------------------------------------------------------------------
def start(comm):
    """Start watching the ranks of this node (every rank calls it once, collectively)."""
    if _state["comm"] is comm or not hasattr(os, "pidfd_open"):  # pidfds: Linux only
        return
    from mpi4py import MPI

    rank, size = comm.Get_rank(), comm.Get_size()
    node = comm.Split_type(MPI.COMM_TYPE_SHARED, key=rank)
    try:
        members = node.allgather((rank, os.getpid()))
        leader = node.Get_rank() == 0
        folder = tempfile.mkdtemp(prefix="kiln-ranks-") if leader else None
        folder = node.bcast(folder)
        if leader:
            watcher = subprocess.Popen(
                [sys.executable, "-I", "-S", os.path.abspath(__file__), folder, str(size),
                 socket.gethostname(), *(f"{r}:{pid}" for r, pid in members)],
                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, close_fds=True,
                start_new_session=True)  # Hydra kills the ranks' process groups, not this
            watcher.stdout.readline()  # it watches (or gave up): a death is seen from here
            watcher.stdout.close()
            _state["watcher"] = watcher  # it outlives this rank: never waited for here
        node.Barrier()
    finally:
        node.Free()
    _state.update(folder=folder, rank=rank, comm=comm)
    try:  # held open for life, never written: it closes the moment this process dies
        _state["fifo"] = os.open(os.path.join(folder, f"fifo{rank}"),
                                 os.O_WRONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:  # no watcher reads it: its pidfd alone tells
        pass
    import atexit

    atexit.register(mark_ended, "exit")


def mark_ended(how):
    """Tell the watcher this rank's ending is not silent ('exit': a normal exit; 'abort':
    kiln reported an error and aborts the job)."""
    if _state["folder"] is None:
        return
    try:
        with open(os.path.join(_state["folder"], str(_state["rank"])), "w") as file:
            file.write(how)
    except OSError:
        pass


# -- the watcher process -----------------------------------------------------------------------
# ioctl(pidfd, PIDFD_GET_INFO) with PIDFD_INFO_EXIT (Linux 6.15+): the wait status of a
# process already reaped, kept for whoever holds its pidfd. struct pidfd_info, version 0:
# u64 mask, u64 cgroupid, 11 u32 ids, s32 exit_code (64 bytes).
PIDFD_GET_INFO = (3 << 30) | (64 << 16) | (0xFF << 8) | 11  # _IOWR(0xFF, 11, 64 bytes)
PIDFD_INFO_EXIT = 1 << 3


def _reaped_status(fd):
    """The wait status of a reaped process from its pidfd, or None (not reaped yet, or a
    kernel before 6.15)."""
    info = bytearray(struct.pack("<Q", PIDFD_INFO_EXIT) + bytes(56))
    try:
        fcntl.ioctl(fd, PIDFD_GET_INFO, info)
    except OSError:
        return None
    if not struct.unpack_from("<Q", info, 0)[0] & PIDFD_INFO_EXIT:
        return None
    return struct.unpack_from("<i", info, 60)[0]


def _zombie_status(pid):
    """The wait status of a process not reaped yet, from /proc, or None."""
    try:
        with open(f"/proc/{pid}/stat") as file:
            fields = file.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    if fields[0] != "Z" or len(fields) < 50:
        return None
    return int(fields[-1])


def _exit_status(fd, pid):
    """'signal 9 (SIGKILL)' or 'exit code 3' for a dead process, or None when unknowable: a
    zombie shows it in /proc, a reaped one in its pidfd (new kernels); Hydra reaps within
    milliseconds, so both are asked, and again if it was reaped in between."""
    for _ in range(2):
        status = _zombie_status(pid)
        if status is None:
            status = _reaped_status(fd)
        if status is not None:
            break
    else:
        return None
    if status & 0x7F:
        number = status & 0x7F
        try:
            name = signal.Signals(number).name
        except ValueError:
            name = "unknown"
        return f"signal {number} ({name})"
    return f"exit code {(status >> 8) & 0xFF}"


def _description(rank, size, pid, host, status):
    who = f"kiln: rank {rank} of {size} (pid {pid} on {host})"
    if status is None:
        what = "died without reporting an error (killed by a signal?)"
    elif status.startswith("signal"):
        what = f"was killed by {status} without reporting an error"
        if status.endswith("(SIGKILL)"):
            what += " (by a user, a scheduler or the kernel's out-of-memory killer)"
    else:
        what = f"exited with {status} without reporting an error"
    return f"{who} {what}; the MPI job ends\n"


def _mark(folder, rank):
    try:
        with open(os.path.join(folder, str(rank))) as file:
            return file.read()
    except OSError:
        return None


def first_silent(folder, ranks, order):
    """(the rank of `order` (ranks in the order they began to die) that marked nothing
    first, or None; whether a rank of `ranks` marked an abort). After an abort nothing is
    silent: kiln printed the error, and the ranks MPI_Abort takes down may die before the
    aborting one."""
    marks = {rank: _mark(folder, rank) for rank in ranks}
    if "abort" in marks.values():
        return None, True
    return next((rank for rank in order if marks[rank] is None), None), False


def watch(folder, size, host, members):
    """Wait for the ranks (rank, pid) of this node to end; report the first silent death.

    Each rank is watched twice: by its pidfd (ready once the process is gone; it gives the
    exit status) and by the FIFO it holds open (closed earlier in the kernel's exit path,
    with its sockets): the first of the two events of a rank dates the beginning of its
    death (see the module's docstring)."""
    watched, order, dead = {}, [], {}  # fd -> (rank, pid, is_pidfd); ranks as they began
    for rank, pid in members:          # to die; rank -> (pid, exit status) once gone
        try:
            watched[os.pidfd_open(pid)] = (rank, pid, True)
        except ProcessLookupError:
            order.append(rank)
            dead[rank] = (pid, None)
        except OSError:  # a kernel before Linux 5.3: no pidfds, nothing watched
            for fd in watched:
                os.close(fd)
            return
        fifo = os.path.join(folder, f"fifo{rank}")
        os.mkfifo(fifo, 0o600)
        watched[os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)] = (rank, pid, False)
    poller = select.epoll()
    for fd in watched:
        poller.register(fd, select.EPOLLIN)
    os.write(1, b"watching\n")  # the ranks wait for this line before they go on
    os.dup2(os.open(os.devnull, os.O_WRONLY), 1)
    ranks = [rank for rank, _ in members]
    done_at = None  # once a death was reported (or kiln aborted): linger a while, then leave
    dying_since, expired = None, False  # waiting for a rank whose FIFO closed to be gone
    while True:
        if done_at is None and dead:
            first, aborted = first_silent(folder, ranks, order)
            if first is not None and first not in dead and not expired:
                dying_since = dying_since or time.monotonic()  # gone in a moment: wait
            elif first is not None or aborted:
                if first is not None and first not in dead:  # its FIFO closed, yet it lives
                    first = next((rank for rank in order if rank in dead
                                  and _mark(folder, rank) is None), None)
                if first is not None and not aborted:
                    pid, status = dead[first]
                    sys.stderr.write(_description(first, size, pid, host, status))
                    sys.stderr.flush()
                done_at = time.monotonic()
        if not any(is_pidfd for _, _, is_pidfd in watched.values()):
            return
        now = time.monotonic()
        if done_at is not None:
            timeout = max(0.0, LINGER_SECONDS - (now - done_at))
        elif dying_since is not None and not expired:
            timeout = max(0.0, DYING_SECONDS - (now - dying_since))
        else:
            timeout = -1
        ready = poller.poll(timeout)
        if not ready and done_at is not None:
            return  # the remaining ranks outlived the linger: not ours to wait for
        expired = expired or not ready
        for fd, _ in ready:
            rank, pid, is_pidfd = watched.pop(fd)
            if rank not in order:
                order.append(rank)
            if is_pidfd:
                dead[rank] = (pid, _exit_status(fd, pid))
            poller.unregister(fd)
            os.close(fd)


def main(argv):
    folder, size, host, *pairs = argv
    members = [tuple(int(part) for part in pair.split(":")) for pair in pairs]
    try:
        watch(folder, int(size), host, members)
    except (BrokenPipeError, KeyboardInterrupt):
        pass
    finally:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main(sys.argv[1:])
