"""`kiln launch -n N train.py [args...]`: the real `mpiexec`, with threads set per rank.

A thin wrapper, not a launcher of its own: it finds the `mpiexec` of the environment (the
`distributed` extra installs MPICH's beside Python), sets OMP_NUM_THREADS and
NUMBA_NUM_THREADS to cores per node divided by ranks per node (unless they are set), and runs

    mpiexec -n N [-ppn P] [-f hostfile] [-iface IF] python -m mpi4py train.py args...

`python -m mpi4py` makes an uncaught exception in one rank abort the whole job at once. A rank
killed by a signal is named by the rank watcher DataParallel starts (distributed/rank_watch.py),
not here: mpiexec's report of a killed rank names a PID that is not always the killed rank's,
so translating it into a rank would sometimes blame the wrong one.
"""

import argparse
import os
import shutil
import sys
from pathlib import Path


def find_mpiexec():
    beside = Path(sys.executable).with_name("mpiexec")
    if beside.exists():
        return str(beside)
    found = shutil.which("mpiexec")
    if found is None:
        raise SystemExit("kiln launch: no mpiexec found beside Python or on PATH; install the "
                         "extra: pip install 'kiln[distributed]'")
    return found


def hosts_in(hostfile):
    """Hosts named in an MPICH hostfile ("host" or "host:ranks" per line, # comments)."""
    lines = Path(hostfile).read_text().splitlines()
    return [line.split("#")[0].strip() for line in lines if line.split("#")[0].strip()]


def ranks_per_node(ranks, ppn=None, hostfile=None):
    if ppn:
        return ppn
    if hostfile:
        return -(-ranks // max(1, len(hosts_in(hostfile))))
    return ranks  # every rank on this node


def threads_per_rank(ranks, ppn=None, hostfile=None, cores=None):
    cores = cores or os.cpu_count() or 1
    return max(1, cores // ranks_per_node(ranks, ppn, hostfile))


def command(args):
    """The mpiexec command line and the environment it runs in."""
    line = [find_mpiexec(), "-n", str(args.ranks)]
    if args.ppn:
        line += ["-ppn", str(args.ppn)]
    if args.hostfile:
        line += ["-f", args.hostfile]
    if args.iface:
        line += ["-iface", args.iface]
    line += [sys.executable, "-m", "mpi4py", args.script, *args.args]
    threads = args.threads or threads_per_rank(args.ranks, args.ppn, args.hostfile)
    env = dict(os.environ)
    env.setdefault("OMP_NUM_THREADS", str(threads))
    env.setdefault("NUMBA_NUM_THREADS", env["OMP_NUM_THREADS"])
    return line, env


def main(argv):
    parser = argparse.ArgumentParser(
        prog="kiln launch", description="Run a training script data-parallel on N MPI ranks "
        "(the script sets keras.distribution.DataParallel()).")
    parser.add_argument("-n", "--np", dest="ranks", type=int, required=True,
                        help="number of ranks (processes) in all")
    parser.add_argument("--threads", type=int, default=None,
                        help="threads per rank (default: cores per node / ranks per node)")
    parser.add_argument("--ppn", type=int, default=None,
                        help="ranks per node (default: all on this node, or spread over the "
                             "hostfile's hosts)")
    parser.add_argument("-f", "--hostfile", default=None,
                        help="MPICH hostfile: one host (or host:ranks) per line")
    parser.add_argument("--iface", default=None,
                        help="network interface between the nodes (e.g. eth0, ib0)")
    parser.add_argument("--dry-run", action="store_true",
                        help="print the command and the thread settings, run nothing")
    parser.add_argument("script")
    parser.add_argument("args", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    if args.ranks < 1:
        parser.error(f"argument -n must be a positive number of ranks, got {args.ranks}")
    line, env = command(args)
    if args.dry_run:
        print(f"OMP_NUM_THREADS={env['OMP_NUM_THREADS']} "
              f"NUMBA_NUM_THREADS={env['NUMBA_NUM_THREADS']} {' '.join(line)}")
        return 0
    sys.stdout.flush()
    os.execve(line[0], line, env)  # mpiexec takes this process over: signals reach it
