"""smddp-bench-torch: the size sweep through torch.distributed.

Exit codes as smddp-bench's: 0 ok, 1 wrong values, 2 below --min-busbw,
3 timeout or lost peer, 70 other runtime error, 64 usage (including a
backend that cannot run here).

Ranks: torchrun's variables (RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR,
MASTER_PORT), or mpirun's (OMPI_COMM_WORLD_RANK/SIZE/LOCAL_RANK; MASTER_ADDR
then defaults to SMDATAPARALLEL_SERVER_ADDR, else 127.0.0.1 when every rank
is on one host), or none (one rank).
"""
import datetime
import os
import socket
import sys

from . import __version__
from .options import UsageError, parse, sweep_sizes

EXIT_OK, EXIT_WRONG, EXIT_BELOW, EXIT_LOST, EXIT_RUNTIME, EXIT_USAGE, EXIT_UNAVAILABLE = 0, 1, 2, 3, 70, 64, 69


def launcher_rank():
    for name in ("RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK"):
        if name in os.environ:
            return os.environ[name]
    return None


class PlacementError(UsageError):
    """This rank's own launcher variables are wrong: it says so itself."""


def say_usage(message, always=False):
    # Before the ranks connect, every rank knows the same; rank 0 says it
    # (or a rank that cannot be placed).
    rank = launcher_rank()
    if always or rank is None or rank.strip() == "0" or not rank.strip().isdigit():
        print(f"smddp-bench-torch: {message}", file=sys.stderr, flush=True)


def _int_env(name, value):
    try:
        number = int(value)
    except ValueError:
        raise UsageError(f"{name}='{value}': expected a whole number") from None
    if number < 0:
        raise UsageError(f"{name}='{value}': expected a whole number")
    return number


def rendezvous_environment(env):
    """RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT from whatever
    launcher started us; raises UsageError for a half-set or malformed one."""
    torchrun = [k for k in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT") if k in env]
    if torchrun:
        missing = [k for k in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT") if k not in env]
        if missing:
            raise UsageError(f"{', '.join(torchrun)} set but not {', '.join(missing)}: set all four "
                             "(torchrun-style) or start under mpirun")
        rank, size = _int_env("RANK", env["RANK"]), _int_env("WORLD_SIZE", env["WORLD_SIZE"])
        local = _int_env("LOCAL_RANK", env.get("LOCAL_RANK", "0"))
        addr, port = env["MASTER_ADDR"], env["MASTER_PORT"]
    elif "OMPI_COMM_WORLD_RANK" in env:
        rank = _int_env("OMPI_COMM_WORLD_RANK", env["OMPI_COMM_WORLD_RANK"])
        size = _int_env("OMPI_COMM_WORLD_SIZE", env.get("OMPI_COMM_WORLD_SIZE", ""))
        local = _int_env("OMPI_COMM_WORLD_LOCAL_RANK", env.get("OMPI_COMM_WORLD_LOCAL_RANK", "0"))
        local_size = env.get("OMPI_COMM_WORLD_LOCAL_SIZE", "")
        addr = env.get("MASTER_ADDR") or env.get("SMDATAPARALLEL_SERVER_ADDR")
        if not addr:
            if local_size != str(size):
                raise UsageError("under mpirun across hosts set MASTER_ADDR (rank 0's host) and MASTER_PORT "
                                 "(-x MASTER_ADDR=... -x MASTER_PORT=...)")
            addr = "127.0.0.1"
        port = env.get("MASTER_PORT", "29500")
    else:
        rank, size, local = 0, 1, 0
        addr = "127.0.0.1"
        with socket.socket() as s:  # one rank: any free port
            s.bind(("127.0.0.1", 0))
            port = str(s.getsockname()[1])
    if size < 1 or rank >= size:
        raise PlacementError(f"RANK={rank} is not below WORLD_SIZE={size} (ranks are 0..{max(size - 1, 0)})")
    port_number = _int_env("MASTER_PORT", port)
    if not 0 < port_number < 65536:
        raise UsageError(f"MASTER_PORT='{port}': expected a port number 1..65535")
    return {"RANK": str(rank), "WORLD_SIZE": str(size), "LOCAL_RANK": str(local), "MASTER_ADDR": addr,
            "MASTER_PORT": str(port_number)}


def import_torch():
    """torch, or one line and exit 69 (EX_UNAVAILABLE) where this python has none."""
    try:
        import torch
    except ImportError as e:
        print(f"smddp-bench-torch: torch cannot be imported by {sys.executable} ({e}); install PyTorch "
              "(Debian: python3-torch) or run the python that has it", file=sys.stderr, flush=True)
        sys.exit(EXIT_UNAVAILABLE)
    return torch


def main(argv=None):
    argv = list(sys.argv if argv is None else argv)
    try:
        o = parse(argv[1:])
        if o.version:
            torch = import_torch()
            print(f"smddp-bench-torch {__version__} (torch {torch.__version__})")
            return EXIT_OK
        rdv = rendezvous_environment(os.environ)
        size = int(rdv["WORLD_SIZE"])
        if o.root >= size:
            raise UsageError(f"-r/--root {o.root} is not a rank of this job (0..{size - 1})")
    except UsageError as e:
        say_usage(str(e), isinstance(e, PlacementError))
        return EXIT_USAGE
    # torch only now: flags are valid.
    torch = import_torch()
    cuda = torch.cuda.is_available()
    try:
        if o.mem == "cuda" and not cuda:
            raise UsageError("--mem cuda: no CUDA device here (torch.cuda.is_available() is False)")
        from .backends import unavailable
        for b in o.backends:
            why = unavailable(b, cuda)
            if why:
                raise UsageError(why)
    except UsageError as e:
        say_usage(str(e))
        return EXIT_USAGE
    os.environ.update(rdv)
    from .sweep import run
    return run(o, argv, cuda, sweep_sizes(o))


def utc_now():
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def cli():
    """The console-script entry (pyproject.toml)."""
    sys.exit(main())
