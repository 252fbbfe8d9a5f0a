"""Finding smddp-bench's processes in /proc, for the end-to-end tests.

smddp-bench runs each rank in a child of a supervising process with the same
command line (bench/src/supervision/supervisor.h): the ranks are the processes whose
parent runs the binary too.
"""
import os


def processes(binary, ranks_only=True, under=None):
    """Sorted PIDs whose argv[0] is `binary`: the ranks, or with
    ranks_only=False their supervisors as well; with `under`, only that
    process and its children (not another test's smddp-bench)."""
    parents = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                if f.read().split(b"\0")[0].decode(errors="replace") != binary:
                    continue
            with open(f"/proc/{entry}/stat") as f:
                parents[int(entry)] = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
    return sorted(pid for pid, ppid in parents.items() if (not ranks_only or ppid in parents)
                  and (under is None or under in (pid, ppid)))


def launcher_rank(pid):
    """The MPI rank mpirun gave `pid` (OMPI_COMM_WORLD_RANK), -1 without one."""
    with open(f"/proc/{pid}/environ", "rb") as f:
        env = dict(kv.split(b"=", 1) for kv in f.read().split(b"\0") if b"=" in kv)
    return int(env.get(b"OMPI_COMM_WORLD_RANK", b"-1"))
