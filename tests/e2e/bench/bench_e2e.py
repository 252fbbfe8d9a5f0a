#!/usr/bin/env python3
"""End-to-end tests of smddp-bench under a real mpirun.

Usage: bench_e2e.py --bench PATH --mpirun PATH TEST
Each TEST is registered in CTest on its own. Every subprocess has a time
limit; every test asserts on values it reads back. Checked runs take a
random --seed, printed first; SMDDP_TEST_SEED=N replays one.
"""
import glob
import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import rank_processes  # noqa: E402  (tests/e2e/rank_processes.py)
from e2e_harness import SEED, fail, main_of_tests  # noqa: E402  (tests/e2e/e2e_harness.py)

ARGS = None
COLLECTIVES = {"allreduce", "allgather", "reducescatter", "broadcast", "reduce", "alltoall", "barrier",
               "gather", "scatter", "sendrecv", "alltoallv"}


def mpirun(np, *bench_args, env=None):
    return [ARGS.mpirun, "--oversubscribe", "--bind-to", "none", "-np", str(np), ARGS.bench, *bench_args,
            "--seed", str(SEED)]


def run(cmd, timeout=300, env=None, cwd=None):
    full_env = dict(os.environ)
    full_env.update(env or {})
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=full_env, cwd=cwd)




def row_bytes(collective, size, nranks, elem=4):
    """The bytes of a row for a requested size: whole elements, and for the
    collectives that give each rank a block, whole blocks (as nccl-tests)."""
    split = ("allgather", "alltoall", "reducescatter", "gather", "scatter", "alltoallv")
    unit = elem * nranks if collective in split else elem
    return size // unit * unit


def table_rows(stdout):
    return [l.split() for l in stdout.splitlines() if l.strip() and not l.startswith("#")]


def shm_segments():
    return set(glob.glob("/dev/shm/smddp-*"))


def bench_processes(ranks_only=True, under=None):
    return rank_processes.processes(ARGS.bench, ranks_only, under)


def test_all_collectives():
    """mpirun -np 4 smddp-bench all -b 8 -e 16M -f 4 -c 1: every collective at
    every size, in both placements, #wrong 0 everywhere."""
    sizes = [8 << (2 * k) for k in range(12)]  # 8 B .. 32 MiB stops at 16M: 8 * 4^11 > 16M
    sizes = [b for b in sizes if b <= 16 << 20]
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "out.json")
        r = run(mpirun(4, "all", "-b", "8", "-e", "16M", "-f", "4", "-c", "1", "-n", "3", "-w", "1", "-J", out))
        if r.returncode != 0:
            fail(f"exit {r.returncode}\n{r.stdout}\n{r.stderr}")
        doc = json.load(open(out))
    rows = table_rows(r.stdout)
    for row in rows:
        # size count type redop root | time algbw busbw #wrong | time algbw busbw #wrong | backend algorithm ratio
        if row[8] != "0" or row[12] != "0":
            fail(f"wrong values in row: {row}")
    got = {(x["collective"], x["bytes"], x["placement"]) for x in doc["rows"] if x["wrong"] == 0}
    want = {(c, row_bytes(c, b, 4), p) for c in COLLECTIVES - {"barrier"} for b in sizes
            for p in ("out-of-place", "in-place")}
    if not want <= got or not any(c == "barrier" for c, _, _ in got):
        fail(f"missing checked rows: {sorted(want - got)[:10]}, barrier {'present' if got else 'absent'}")
    if {x["collective"] for x in doc["rows"]} != COLLECTIVES:
        fail(f"collectives in JSON: {sorted({x['collective'] for x in doc['rows']})}")
    if len(rows) != len({(c, b) for c, b, _ in got}):
        fail(f"{len(rows)} table rows for {len({(c, b) for c, b, _ in got})} JSON rows")
    print(f"{len(rows)} rows of {len(COLLECTIVES)} collectives, all #wrong 0")


def test_dtypes_ops():
    """Every dtype and op checks exactly, smddp and mpi, 3 ranks."""
    r = run(mpirun(3, "allreduce", "reducescatter", "reduce", "-b", "64", "-e", "64K", "-f", "32", "-d", "all",
                   "-o", "all", "-c", "1", "-n", "1", "-w", "0", "--backend", "smddp,mpi", "-r", "2"))
    if r.returncode != 0:
        fail(f"exit {r.returncode}\n{r.stdout[-3000:]}\n{r.stderr}")
    rows = table_rows(r.stdout)
    bad = [row for row in rows if row[8] != "0" or row[12] != "0"]
    if bad or len(rows) != 3 * 12 * 5 * 3 * 2:  # 12 dtypes, fp8 included
        fail(f"{len(bad)} rows with wrong values of {len(rows)}: {bad[:3]}")
    print(f"{len(rows)} rows exact")


def test_compare_json():
    """--backend smddp,mpi prints the ratio column; -J holds both backends' rows."""
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "out.json")
        csv = os.path.join(d, "out.csv")
        r = run(mpirun(2, "allreduce", "-b", "16M", "-e", "64M", "-f", "2", "-n", "3", "-w", "1", "--backend", "smddp,mpi",
                       "-J", out, "--csv", csv, "--per-iteration"))
        if r.returncode != 0:
            fail(f"exit {r.returncode}\n{r.stdout}\n{r.stderr}")
        header = [l for l in r.stdout.splitlines() if "ratio" in l]
        if not header:
            fail("no ratio column in the table")
        rows = table_rows(r.stdout)
        # nccl-tests' 13 fields, 8 per-iteration ones (i_min i_max i_p99 i_cv% per placement), then ours.
        if {row[-3] for row in rows} != {"smddp", "mpi"} or len(rows) != 6 or any(len(row) != 24 for row in rows):
            fail(f"expected 3 sizes x 2 backends of 24 fields, got {rows}")
        for row in rows:
            if row[-3] == "smddp" and float(row[-1]) != 1.0:
                fail(f"first backend ratio must be 1.00: {row}")
            if row[-3] == "mpi" and float(row[-1]) <= 0:
                fail(f"ratio must be positive: {row}")
        with open(out) as f:
            doc = json.load(f)
        if not doc["complete"] or doc["nranks"] != 2:
            fail("JSON not complete")
        got = {(x["backend"], x["bytes"], x["placement"]) for x in doc["rows"]}
        want = {(b, s, p) for b in ("smddp", "mpi") for s in (16 << 20, 32 << 20, 64 << 20)
                for p in ("out-of-place", "in-place")}
        if got != want:
            fail(f"JSON rows {sorted(got)} != {sorted(want)}")
        for x in doc["rows"]:
            if x["wrong"] != 0 or x["busbw_gbps"] <= 0 or "per_iteration" not in x:
                fail(f"bad JSON row {x}")
            if x["per_iteration"]["p50_us"] > x["per_iteration"]["max_us"]:
                fail(f"p50 above max in {x}")
        if "argv" not in doc or "environment" not in doc or len(doc["ranks"]) != 2:
            fail("JSON lacks argv, environment or ranks")
        lines = open(csv).read().splitlines()
        if len(lines) != 1 + 12 or any(", " in l or l != l.strip() for l in lines):
            fail(f"CSV has {len(lines)} lines or padded fields")
    print("ratio column, JSON and CSV ok")


def test_kill_rank():
    """SIGKILL of one rank mid-sweep: bounded end, lost peer named, valid JSON, nothing left behind."""
    before = shm_segments()
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "out.json")
        cmd = mpirun(4, "allreduce", "-b", "1M", "-e", "64M", "-f", "2", "-n", "200", "-w", "1", "-T", "20",
                     "-J", out)
        # Keep the survivors alive after the kill so they report the lost peer.
        cmd[1:1] = ["--mca", "orte_abort_on_non_zero_status", "0"]
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        deadline = time.time() + 60
        while time.time() < deadline:
            if os.path.exists(out) and json.load(open(out))["rows"]:
                break
            time.sleep(0.2)
        else:
            p.kill()
            fail("no row completed within 60 s")
        pids = sorted(bench_processes())
        if len(pids) < 4:
            p.kill()
            fail(f"expected 4 ranks, found {pids}")
        victim, victim_rank = pids[2], rank_processes.launcher_rank(pids[2])
        os.kill(victim, signal.SIGKILL)
        t0 = time.time()
        try:
            stdout, stderr = p.communicate(timeout=40)
        except subprocess.TimeoutExpired:
            p.kill()
            fail("job did not end within 40 s of the kill")
        elapsed = time.time() - t0
        if p.returncode != 3:
            fail(f"exit {p.returncode} after a rank was killed, want 3\n{stderr}")
        if "lost peer" not in stderr:
            fail(f"no rank reported the lost peer:\n{stderr}")
        if f"rank {victim_rank} on {socket.gethostname()} (pid {victim}) was killed by signal 9" not in stderr:
            fail(f"the killed rank's supervisor did not name it:\n{stderr}")
        doc = json.load(open(out))
        if doc["complete"] or not doc["rows"]:
            fail("JSON should hold the completed rows and complete=false")
        print(f"ended {elapsed:.1f} s after the kill, exit {p.returncode}, {len(doc['rows'])} rows in JSON")
        print([l for l in stderr.splitlines() if "smddp-bench" in l][:3])
    time.sleep(1)
    if shm_segments() - before:
        fail(f"shared memory left behind: {shm_segments() - before}")
    if bench_processes(ranks_only=False):
        fail(f"processes left behind: {bench_processes(ranks_only=False)}")


def test_supervisor():
    """Each rank runs under a supervisor: a rank killed outright is named and
    ends the job with 3; a signal to the supervisor reaches the rank and ends
    both; SMDDP_SUPERVISE=0 runs the rank in one process."""
    host = socket.gethostname()
    endless = [ARGS.bench, "allreduce", "-b", "64K", "-e", "64K", "-n", "100000000", "-w", "0"]

    def start(env=None):
        """Returns once the rank sweeps: it has printed the table's header."""
        p = subprocess.Popen(endless, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             env={**os.environ, **(env or {})})
        timer = threading.Timer(30, p.kill)
        timer.start()
        for line in p.stdout:
            if "out-of-place" in line:
                break
        timer.cancel()
        found = bench_processes(ranks_only=env is None, under=p.pid)
        if p.poll() is not None or len(found) != 1:
            p.kill()
            fail(f"the rank did not start within 30 s: {found}")
        return p, found[0]

    # 60 s: MPI's singleton ends its rank through its own daemon, which took
    # over 20 s once with three tests at a time on two cores (CI rehearsal of
    # stop 44; 6 s when rerun). Still a bound: a rank that never ends fails.
    def ended(p, what):
        try:
            return p.communicate(timeout=60)[1]
        except subprocess.TimeoutExpired:
            p.kill()
            fail(f"still running 60 s after {what}")

    p, rank = start()
    if rank == p.pid:
        fail("the rank runs in the launched process, not under a supervisor")
    os.kill(rank, signal.SIGKILL)
    stderr = ended(p, "the rank was killed")
    if p.returncode != 3 or f"rank 0 on {host} (pid {rank}) was killed by signal 9 (Killed)" not in stderr:
        fail(f"killed rank: exit {p.returncode}, {stderr!r}")

    for sig in (signal.SIGTERM, signal.SIGINT):
        p, rank = start()
        p.send_signal(sig)
        stderr = ended(p, f"{sig.name} to the supervisor")
        # The rank gets the signal: it dies of it (and so does the supervisor)
        # or exits as its handler decides (MPI's singleton exits 1); never
        # reported as a rank lost to an unknown signal.
        if p.returncode == 0 or "was killed by signal" in stderr or os.path.exists(f"/proc/{rank}"):
            fail(f"{sig.name}: exit {p.returncode}, {stderr!r}")

    p, rank = start()
    p.kill()  # the supervisor itself: its rank must not outlive it
    ended(p, "SIGKILL to the supervisor")
    deadline = time.time() + 10
    while os.path.exists(f"/proc/{rank}") and time.time() < deadline:
        time.sleep(0.1)
    if os.path.exists(f"/proc/{rank}") and open(f"/proc/{rank}/stat").read().rsplit(")", 1)[1].split()[0] != "Z":
        fail("the rank outlived its killed supervisor")

    p, rank = start({"SMDDP_SUPERVISE": "0"})
    if rank != p.pid:
        fail("SMDDP_SUPERVISE=0 still forked a rank process")
    p.kill()
    ended(p, "SIGKILL")
    if p.returncode != -signal.SIGKILL:
        fail(f"unsupervised rank killed: exit {p.returncode}")
    print("killed rank -> 3 and named; SIGTERM/SIGINT forwarded; rank dies with its supervisor; SMDDP_SUPERVISE=0 ok")


def wait_for_header(p, seconds):
    """Reads p's stdout (raw, so nothing waits in a Python buffer) until the
    table's column header is out, or fails."""
    import select
    fd, seen = p.stdout.fileno(), b""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        ready, _, _ = select.select([fd], [], [], 1.0)
        if not ready:
            if p.poll() is not None:
                fail(f"exited {p.returncode} before its table header")
            continue
        chunk = os.read(fd, 65536)
        if not chunk:
            fail(f"stdout closed before the table header (exit {p.wait()})")
        seen += chunk
        if b"(B)" in seen:
            time.sleep(0.5)  # into the first row's timed calls
            return
    p.kill()
    fail(f"no table header within {seconds} s")


def test_timeout():
    """A stopped rank: the others time out after -T, exit 3, naming collective and peer."""
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "out.json")
        p = subprocess.Popen(mpirun(3, "allreduce", "-b", "64K", "-e", "64K", "-n", "100000", "-w", "1",
                                    "-T", "3", "-J", out),
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        # Stop a rank only once the ranks are past MPI_Init (which has no
        # deadline): when the first row is on the way, i.e. the header is out.
        wait_for_header(p, 120)
        pids = sorted(bench_processes())
        if len(pids) < 3:
            p.kill()
            fail(f"expected 3 ranks, found {pids}")
        stopped_rank = rank_processes.launcher_rank(pids[1])
        os.kill(pids[1], signal.SIGSTOP)
        try:
            stdout, stderr = p.communicate(timeout=40)
        except subprocess.TimeoutExpired:
            p.kill()
            fail("hung: no timeout within 40 s")
        finally:
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGCONT)
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
        if p.returncode != 3:
            fail(f"exit {p.returncode}, want 3\n{stderr}")
        # Every other rank waits on the stopped one, directly or through a
        # neighbour: at least one message names it and its host.
        stopped = f"rank {stopped_rank} on {socket.gethostname()}"
        # The stop may land in the barrier between warm-up and timed calls.
        if not re.search(r"(allreduce|barrier) timed out after 3 s", stderr) or stopped not in stderr:
            fail(f"timeout message lacks the collective or '{stopped}':\n{stderr}")
        print([l for l in stderr.splitlines() if "timed out" in l][:2])


BAD = [
    (["-b", "64M", "-e", "8"], "above"),
    (["-f", "0.5", "-b", "8", "-e", "64"], "stepfactor"),
    (["-f", "0", "-b", "8", "-e", "64"], "stepfactor"),
    (["-f", "-2", "-b", "8", "-e", "64"], "stepfactor"),
    (["frobnicate"], "unknown collective"),
    (["-d", "float128"], "unknown datatype"),
    (["-o", "xor"], "unknown op"),
    (["--backend", "gloo"], "unknown backend"),
    (["--algorithm", "bogus"], "unknown algorithm"),
    (["-b", "12Q"], "expected a byte count"),
    (["-e", "M"], "expected a byte count"),
    (["-b", "-8"], "expected a byte count"),
    (["-n", "0"], "iters"),
    (["-n", "ten"], "iters"),
    (["-w", "-1"], "warmup"),
    (["-a", "7"], "average"),
    (["--in-place", "--out-of-place"], "exclude"),
    (["-J", "/nonexistent-dir/out.json"], "does not exist"),
    (["--csv", "/proc/out.csv"], "cannot write"),
    (["--mem", "gpu"], "unknown --mem"),
    (["-T", "-1"], "timeout"),
    (["--min-busbw", "-3"], "min-busbw"),
    (["--no-such-flag"], "no-such-flag"),
]


def test_bad_input():
    """Each bad invocation: exit 64, one line on stderr, no output file, before any work."""
    with tempfile.TemporaryDirectory() as d:
        for args, needle in BAD:
            json_path = os.path.join(d, "never.json")
            extra = [] if any(a in ("-J",) for a in args) else ["-J", json_path]
            r = run([ARGS.bench, *args, *extra], timeout=30)
            lines = [l for l in r.stderr.splitlines() if l.strip()]
            if r.returncode != 64:
                fail(f"{args}: exit {r.returncode}, want 64\n{r.stderr}")
            if len(lines) != 1 or needle not in lines[0]:
                fail(f"{args}: want one line mentioning '{needle}', got {lines}")
            if os.listdir(d):
                fail(f"{args}: created {os.listdir(d)}")
        # Checks that need the rank count run under mpirun (a -e too large for
        # memory is lowered, not refused: cli_e2e.py nccl_tests_lines).
        for args, needle in [(["-r", "5"], "not a rank")]:
            r = run(mpirun(2, *args, "-J", os.path.join(d, "never.json")), timeout=60)
            lines = [l for l in r.stderr.splitlines() if l.startswith("smddp-bench")]
            if r.returncode != 64 or len(lines) != 1 or needle not in lines[0]:
                fail(f"{args}: exit {r.returncode}, lines {lines}")
            if os.listdir(d):
                fail(f"{args}: created {os.listdir(d)}")
    print(f"{len(BAD) + 1} bad invocations refused with exit 64")


def test_dtype_names():
    """fp8 through smddp and mpi (our kernels in a user-defined MPI_Op), exact
    at 2 and 4 ranks; nccl-tests' type names printed, ours accepted; -G
    refused on host memory."""
    for np, dtype in ((2, "f8e4m3"), (4, "f8e5m2"), (4, "f8e4m3")):
        r = run(mpirun(np, "allreduce", "reducescatter", "-b", "64", "-e", "64K", "-f", "32", "-d", dtype,
                       "-o", "sum,avg,max", "-c", "1", "-n", "1", "-w", "0", "--backend", "smddp,mpi"))
        rows = table_rows(r.stdout)
        if r.returncode != 0 or len(rows) != 2 * 3 * 3 * 2:
            fail(f"{dtype} on {np}: exit {r.returncode}, {len(rows)} rows\n{r.stdout[-2000:]}\n{r.stderr}")
        bad = [row for row in rows if row[2] != dtype or row[8] != "0" or row[12] != "0"]
        if bad or {"smddp", "mpi"} - {t for row in rows for t in row}:
            fail(f"{dtype} on {np}: rows {bad[:3]} (want type {dtype}, #wrong 0, both backends)")
    # nccl-tests' names, our older ones as aliases: the table prints nccl-tests'.
    for given, shown in (("float", "float"), ("half", "half"), ("float32", "float"), ("float16", "half"),
                         ("bf16", "bfloat16"), ("double", "double")):
        r = run(mpirun(1, "allreduce", "-b", "1K", "-e", "1K", "-d", given, "-c", "1", "-n", "1", "-w", "0"))
        rows = table_rows(r.stdout)
        if r.returncode != 0 or [row[2] for row in rows] != [shown] or rows[0][8] != "0":
            fail(f"-d {given}: exit {r.returncode}, rows {rows}, want type {shown}\n{r.stderr}")
    r = run([ARGS.bench, "allreduce", "-G", "1"], timeout=30)
    lines = [l for l in r.stderr.splitlines() if l.strip()]
    if r.returncode != 64 or len(lines) != 1 or "CUDA graph" not in lines[0]:
        fail(f"-G 1 on host memory: exit {r.returncode}, {lines}")
    print("fp8 exact on smddp and mpi at 2 and 4 ranks; names and aliases; -G refused")


def test_threshold():
    """--min-busbw above anything reachable: exit 2, rows still reported; the
    JSON's totals.verdicts names the gate's code and action class (docs/diag.md,
    "Failure codes"), and a run that passes has none."""
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "out.json")
        r = run(mpirun(2, "allreduce", "-b", "1M", "-e", "2M", "-n", "2", "-c", "1", "--min-busbw", "100000",
                       "-J", out))
        if r.returncode != 2 or "Below threshold" not in r.stdout:
            fail(f"exit {r.returncode}\n{r.stdout}")
        verdicts = json.load(open(out))["totals"].get("verdicts")
        want = [{"code": "SMDDP-BENCH-BELOW-THRESHOLD", "action": "escalate"}]
        if not isinstance(verdicts, list) or [{k: v.get(k) for k in ("code", "action")} for v in verdicts] != want or \
                not re.fullmatch(r"allreduce \(smddp\): average bus bandwidth [0-9.]+ GB/s below --min-busbw "
                                 r"100000\.000 GB/s", verdicts[0].get("text", "")):
            fail(f"totals.verdicts {verdicts}, want {want} with the average and the threshold")
        r2 = run(mpirun(2, "allreduce", "-b", "1M", "-e", "1M", "-n", "1", "-w", "0", "-c", "1", "--min-busbw", "0.000001",
                        "-J", out))
        if r2.returncode != 0 or json.load(open(out))["totals"].get("verdicts") != []:
            fail(f"a passing gate: exit {r2.returncode}, totals {json.load(open(out))['totals']}")
    rows = table_rows(r.stdout)
    if [row[0] for row in rows] != [str(1 << 20), str(2 << 20)] or any(
            row[8] != "0" or row[12] != "0" or float(row[7]) <= 0 for row in rows):
        fail(f"rows not reported with values: {rows}")


def test_mpi_tuned():
    """mpi:ALGORITHM: Open MPI's tuned algorithm forced where the collective has it, its default elsewhere."""
    r = run(mpirun(2, "allreduce", "broadcast", "-b", "64K", "-e", "256K", "-f", "4", "-n", "2", "-w", "1", "-c", "1",
                   "--backend", "smddp,mpi,mpi:ring"))
    if r.returncode != 0:
        fail(f"exit {r.returncode}\n{r.stderr}")
    rows = table_rows(r.stdout)
    algos = {(row[3] != "none", row[13]): row[14] for row in rows}  # (reduces, backend) -> algorithm
    if algos.get((True, "mpi:ring")) != "ring" or algos.get((False, "mpi:ring")) != "mpi" or \
            algos.get((True, "mpi")) != "mpi" or any(row[8] != "0" or row[12] != "0" for row in rows):
        fail(f"allreduce should run ring, broadcast (no 'ring' in Open MPI) its default, all exact:\n{r.stdout}")
    bad = run(mpirun(2, "allreduce", "-b", "64K", "-e", "64K", "-n", "1", "--backend", "smddp,mpi:bogus"))
    lines = [l for l in bad.stderr.splitlines() if l.startswith("smddp-bench:")]
    if bad.returncode != 64 or len(lines) != 1 or "offered: " not in lines[0] or "ring" not in lines[0]:
        fail(f"mpi:bogus: exit {bad.returncode}, lines {lines}")
    print(f"{len(rows)} rows; mpi:ring forced on allreduce only; {lines[0][:80]}...")


def test_roofline():
    """--roofline: one host bandwidth measurement, every row as a fraction of it."""
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "out.json")
        r = run(mpirun(2, "allgather", "-b", "1M", "-e", "4M", "-f", "2", "-n", "2", "--roofline", "-J", out))
        if r.returncode != 0:
            fail(f"exit {r.returncode}\n{r.stderr}")
        doc = json.load(open(out))
        bw = doc.get("host_memory_bandwidth_gbps", 0)
        if bw <= 0 or "host memory bandwidth" not in r.stdout:
            fail("no host memory bandwidth measured")
        for x in doc["rows"]:
            if abs(x["roof_fraction"] - x["busbw_gbps"] / bw) > 1e-6:
                fail(f"roof_fraction {x['roof_fraction']} != busbw / bound in {x}")
        if any(len(row) != 17 for row in table_rows(r.stdout)):
            fail("table rows lack the roof column")


def test_huge_pages():
    """--huge-pages: results still right, the JSON says so; refused where the kernel has THP off."""
    thp = "/sys/kernel/mm/transparent_hugepage/enabled"
    modes = open(thp).read() if os.path.exists(thp) else ""
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "out.json")
        # cma from 1 MiB at 2 ranks: the kernel copies into the peer's huge pages.
        r = run(mpirun(2, "allreduce", "alltoall", "-b", "2M", "-e", "8M", "-f", "2", "-n", "3", "-c", "1",
                       "--backend", "smddp,mpi", "--huge-pages", "-J", out))
        if not modes or "[never]" in modes:
            if r.returncode != 64 or "transparent huge pages" not in r.stderr or os.path.exists(out):
                fail(f"THP off here ({modes.strip()!r}): want exit 64 and no file, got {r.returncode}\n{r.stderr}")
            print("refused: transparent huge pages are off on this host")
            return
        if r.returncode != 0:
            fail(f"exit {r.returncode}\n{r.stderr}")
        doc = json.load(open(out))
        if doc["devices"] != {"memory": "host", "huge_pages": True}:
            fail(f"devices: {doc['devices']}")
        got = {(x["collective"], x["bytes"], x["placement"]) for x in doc["rows"] if x["wrong"] == 0}
        want = {(c, b, p) for c in ("allreduce", "alltoall") for b in (2 << 20, 4 << 20, 8 << 20)
                for p in ("out-of-place", "in-place")}
        if got != want:
            fail(f"rows checked right: {sorted(got)}, want {sorted(want)}")
        r = run(mpirun(2, "allreduce", "-b", "8", "-e", "8", "-n", "1", "-J", out))
        if r.returncode != 0 or json.load(open(out))["devices"]["huge_pages"] is not False:
            fail(f"without the flag: exit {r.returncode}, devices {json.load(open(out)).get('devices')}")
    print("huge-page buffers: every row right, recorded in the JSON")


def main():
    main_of_tests(globals(), {"--bench": True, "--mpirun": True})


if __name__ == "__main__":
    main()
