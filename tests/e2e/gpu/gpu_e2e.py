#!/usr/bin/env python3
"""End-to-end tests of smddp-bench with device buffers (CUDA builds).

Usage: gpu_e2e.py --bench PATH --mpirun PATH TEST
Tests that need a GPU exit 77 (CTest SKIP_RETURN_CODE) with a visible
"SKIP: no CUDA device" line on hosts without one - never a pass. no_device is
the opposite: it checks the refusal on such hosts and skips where a GPU is.
"""
import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import rank_processes  # noqa: E402  (tests/e2e/rank_processes.py)

ARGS = None
SKIP = 77


def mpirun(np, *bench_args):
    return [ARGS.mpirun, "--oversubscribe", "--bind-to", "none", "-np", str(np), ARGS.bench, *bench_args]


def run(cmd, timeout=300):
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


def skip(msg):
    print("SKIP:", msg)
    sys.exit(SKIP)


def device_check():
    """(has_device, reason), from smddp-bench itself: --mem cuda with the mpi backend is refused
    before MPI starts, for want of a device first, else because MPI takes host buffers only."""
    r = run([ARGS.bench, "--mem", "cuda", "--backend", "mpi"], timeout=60)
    if r.returncode != 64:
        fail(f"probe: exit {r.returncode}, stderr {r.stderr!r}")
    if "no CUDA device" in r.stderr:
        return False, r.stderr.strip()
    return True, ""


def gpu_count():
    smi = shutil.which("nvidia-smi")
    if smi:
        r = run([smi, "-L"], timeout=60)
        n = len([l for l in r.stdout.splitlines() if l.startswith("GPU ")])
        if n:
            return n
    return 1


def need_device():
    has, why = device_check()
    if not has:
        skip(f"no CUDA device ({why})")


def sweep_json(np, *bench_args, timeout=600):
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "out.json")
        r = run(mpirun(np, *bench_args, "--mem", "cuda", "-J", out), timeout=timeout)
        if r.returncode != 0:
            fail(f"exit {r.returncode}\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}")
        with open(out) as f:
            return json.load(f)


def check_rows(doc, backend, collectives, expected_algorithm):
    if not doc["complete"] or doc["devices"]["memory"] != "cuda":
        fail("JSON not complete or not --mem cuda")
    rows = doc["rows"]
    seen = {x["collective"] for x in rows}
    if seen != set(collectives):
        fail(f"collectives {sorted(seen)} != {sorted(collectives)}")
    for x in rows:
        if x["backend"] != backend:
            fail(f"unexpected backend in {x}")
        if x["collective"] != "barrier" and x["wrong"] != 0:
            fail(f"{x['wrong']} wrong values: {x}")
        if x["collective"] != "barrier" and expected_algorithm and x["algorithm"] != expected_algorithm:
            fail(f"algorithm {x['algorithm']} != {expected_algorithm}: {x}")
        if x["time_us"] <= 0:
            fail(f"no time measured: {x}")
    if {x["placement"] for x in rows} != {"in-place", "out-of-place"}:
        fail("expected both placements")
    return len(rows)


ALL = ["allreduce", "allgather", "reducescatter", "broadcast", "reduce", "alltoall", "barrier"]


def collectives_for(backend, np):
    doc = sweep_json(np, "all", "-b", "8", "-e", "8M", "-f", "8", "-c", "1", "-n", "2", "-w", "1",
                     "--backend", backend, "-r", str(np - 1))
    n = check_rows(doc, backend, ALL, "cuda_staged" if backend == "smddp" else "nccl")
    doc = sweep_json(np, "allreduce", "reducescatter", "reduce", "allgather", "-b", "64", "-e", "64K", "-f", "32",
                     "-d", "all", "-o", "all", "-c", "1", "-n", "1", "-w", "0", "--backend", backend)
    n += check_rows(doc, backend, ["allreduce", "reducescatter", "reduce", "allgather"], None)
    print(f"{backend}: {n} rows on {np} ranks, all #wrong 0")


def test_no_device():
    """Without a GPU, --mem cuda and --backend nccl are refused before MPI starts (exit 64, one line)."""
    has, _ = device_check()
    if has:
        skip("a CUDA device is present; this test is for hosts without one")
    cases = [
        (["--mem", "cuda"], "--mem cuda: no CUDA device on host"),
        (["--mem", "cuda", "--backend", "nccl"], "--mem cuda: no CUDA device on host"),
        (["--backend", "nccl"], "--backend nccl takes device buffers: add --mem cuda"),
    ]
    for args, want in cases:
        r = run([ARGS.bench, *args], timeout=60)
        lines = r.stderr.strip().splitlines()
        if r.returncode != 64 or len(lines) != 1 or want not in lines[0]:
            fail(f"{args}: exit {r.returncode}, stderr {r.stderr!r}; want 64 and one line with {want!r}")
    r = run([ARGS.bench, "--list-algorithms"], timeout=60)
    staged = [l.split() for l in r.stdout.splitlines() if " cuda_staged " in l]
    if r.returncode != 0 or sorted(s[0] for s in staged) != sorted(c for c in ALL if c != "barrier"):
        fail(f"--list-algorithms should list cuda_staged for every collective but barrier:\n{r.stdout}")
    if any(s[2] != "cuda" for s in staged):
        fail(f"cuda_staged rows must say memory 'cuda': {staged}")
    print("refusals and algorithm list as expected")


def test_smddp_collectives():
    """The engine with device buffers: every collective, dtype and op exact on 2 ranks (one GPU may be shared)."""
    need_device()
    collectives_for("smddp", 2)


def test_nccl_collectives():
    """NCCL: every collective, dtype and op exact; one rank per GPU (NCCL refuses two ranks on one GPU)."""
    need_device()
    collectives_for("nccl", min(2, gpu_count()))


def test_nccl_kill_rank():
    """SIGKILL of one NCCL rank: the job ends within the timeout plus grace, never hangs."""
    need_device()
    if gpu_count() < 2:
        skip("needs 2 GPUs (NCCL takes one GPU per rank)")
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "out.json")
        cmd = mpirun(2, "allreduce", "-b", "64M", "-e", "256M", "-f", "2", "-n", "500", "-w", "1", "-T", "20",
                     "--mem", "cuda", "--backend", "nccl", "-J", out)
        cmd[1:1] = ["--mca", "orte_abort_on_non_zero_status", "0"]
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        deadline = time.time() + 120
        while time.time() < deadline and not (os.path.exists(out) and json.load(open(out))["rows"]):
            time.sleep(0.2)
        pids = rank_processes.processes(ARGS.bench)
        if len(pids) < 2:
            p.kill()
            fail(f"expected 2 ranks running, found {pids}")
        os.kill(sorted(pids)[1], signal.SIGKILL)
        try:
            _, stderr = p.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            p.kill()
            fail("job did not end within 60 s of the kill")
        if p.returncode != 3:
            fail(f"exit {p.returncode} after a rank was killed, want 3\n{stderr[-2000:]}")
        if not re.search(r"timed out|lost peer|NCCL error", stderr):
            fail(f"no rank reported the failure:\n{stderr[-2000:]}")
        print(f"ended with exit {p.returncode}")


def main():
    global ARGS
    parser = argparse.ArgumentParser()
    parser.add_argument("--bench", required=True)
    parser.add_argument("--mpirun", required=True)
    parser.add_argument("test")
    ARGS = parser.parse_args()
    globals()["test_" + ARGS.test]()
    print("PASS", ARGS.test)


if __name__ == "__main__":
    main()
