#!/usr/bin/env python3
"""Hang location: one rank stopped before call #N (SMDDP_TEST_STALL_AT=RANK:N
raises SIGSTOP in that rank before it publishes call N). The report names
that rank, its host and N, in the text and the -J document; every rank ends
within the deadline; no shared-memory segment and no process is left.

Usage: hang_e2e.py --bench PATH --mpirun PATH TEST
  engine    --backend smddp: the engine's deadline (-T) ends the waiting ranks
  watchdog  --backend mpi: MPI cannot time out, the watchdog ends them
  signal    SIGUSR1 to mpirun while the job hangs: the report, and the job goes on
  sigstop   a rank stopped by the test inside its calls (not before a known call)
"""
import argparse
import glob
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import rank_processes  # noqa: E402

ARGS = None
HOST = socket.gethostname()
STALL_RANK, STALL_AT = 2, 150  # after the 100 start-up calls, inside the first row


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


def state(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0]
    except OSError:
        return ""


def segments():
    return set(glob.glob("/dev/shm/smddp-progress-*"))


def command(backend, timeout_s, json_path):
    return [ARGS.mpirun, "--oversubscribe", "--bind-to", "none", "-np", "4", "-x", "SMDDP_TEST_STALL_AT",
            ARGS.bench, "allreduce", "-b", "8", "-e", "1K", "-n", "50", "-w", "5", "--backend", backend,
            "-T", str(timeout_s), "-J", json_path]


def environment():
    env = dict(os.environ)
    env["SMDDP_TEST_STALL_AT"] = f"{STALL_RANK}:{STALL_AT}"
    return env


def expect_nothing_left(before):
    deadline = time.time() + 15
    while time.time() < deadline and rank_processes.processes(ARGS.bench, ranks_only=False):
        time.sleep(0.2)
    left = rank_processes.processes(ARGS.bench, ranks_only=False)
    described = [f"{pid} (state {state(pid)}, rank {rank_processes.launcher_rank(pid)})" for pid in left]
    for pid in left:  # do not leave them to the next test either
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    if left:
        fail(f"processes left behind: {described}")
    if segments() - before:
        fail(f"shared-memory segments left behind: {sorted(segments() - before)}")


def expect_report(stderr, doc):
    want = (f"hang: rank {STALL_RANK} on host {HOST} finished allreduce #{STALL_AT - 1} and has not started "
            f"#{STALL_AT} (process stopped); the 3 others wait in allreduce #{STALL_AT}")
    if want not in stderr:
        fail(f"no line '{want}' in:\n{stderr}")
    if doc is None:
        return
    hang = doc.get("hang")
    if not hang:
        fail(f"no hang object in the -J document: {json.dumps(doc)[:2000]}")
    if hang["behind"] != [STALL_RANK] or hang["trigger"] != "timeout" or hang["host"] != HOST:
        fail(f"hang object: {hang}")
    ranks = {r["rank"]: r for r in hang["ranks"]}
    stalled = ranks[STALL_RANK]
    if (stalled["sequence"], stalled["in_call"], stalled["process"], stalled["host"]) != \
            (STALL_AT - 1, False, "stopped", HOST):
        fail(f"stalled rank's record: {stalled}")
    for r in (0, 1, 3):
        if (ranks[r]["sequence"], ranks[r]["in_call"], ranks[r]["collective"]) != (STALL_AT, True, "allreduce"):
            fail(f"rank {r}'s record: {ranks[r]}")
    if doc.get("complete") is not False or doc["totals"]["exit_code"] != 3:
        fail(f"document: complete {doc.get('complete')}, totals {doc.get('totals')}")


def run_stalled(backend):
    before = segments()
    timeout_s = 4
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "out.json")
        start = time.time()
        try:
            r = subprocess.run(command(backend, timeout_s, out), capture_output=True, text=True, timeout=120,
                               env=environment())
        except subprocess.TimeoutExpired:
            expect_nothing_left(set())
            fail("the job did not end within 120 s")
        took = time.time() - start
        if r.returncode != 3:
            fail(f"exit {r.returncode}, want 3\n{r.stderr}")
        with open(out) as f:
            doc = json.load(f)
        expect_report(r.stderr, doc)
    expect_nothing_left(before)
    print([l for l in r.stderr.splitlines() if "hang:" in l], f"ended after {took:.1f} s with -T {timeout_s}")


def test_engine():
    run_stalled("smddp")


def test_watchdog():
    run_stalled("mpi")


def test_signal():
    before = segments()
    with tempfile.TemporaryDirectory() as d:
        out, err_path = os.path.join(d, "out.json"), os.path.join(d, "stderr")
        with open(err_path, "w") as err:
            p = subprocess.Popen(command("smddp", 60, out), stdout=subprocess.DEVNULL, stderr=err, text=True,
                                 env=environment())
        text = ""
        try:
            deadline = time.time() + 45
            while time.time() < deadline and not any(state(pid) == "T" for pid in rank_processes.processes(ARGS.bench)):
                time.sleep(0.2)  # until the stalled rank has stopped itself
            while time.time() < deadline and "hang:" not in text:
                p.send_signal(signal.SIGUSR1)  # mpirun forwards it to the ranks
                time.sleep(1)
                with open(err_path) as f:
                    text = f.read()
            if p.poll() is not None:
                fail(f"SIGUSR1 ended the job (exit {p.returncode}):\n{text}")
        finally:
            p.terminate()
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        expect_report(text, None)
    expect_nothing_left(before)
    print([l for l in text.splitlines() if "hang:" in l])


def test_sigstop():
    """A test driver stops a rank inside its calls: the report names it, in
    the call the others wait in, as stopped."""
    before = segments()
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "out.json")
        cmd = [ARGS.mpirun, "--oversubscribe", "--bind-to", "none", "-np", "3", ARGS.bench, "allreduce",
               "-b", "64K", "-e", "64K", "-n", "100000", "-w", "1", "-T", "4", "-J", out]
        p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        deadline, pids = time.time() + 60, []
        while time.time() < deadline and len(pids) < 3:
            time.sleep(0.5)
            pids = rank_processes.processes(ARGS.bench)
        time.sleep(2)  # into the timed calls
        victim_rank = 2  # not 0: rank 0 writes the -J document
        victim = next(pid for pid in pids if rank_processes.launcher_rank(pid) == victim_rank)
        os.kill(victim, signal.SIGSTOP)
        try:
            _, stderr = p.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            p.kill()
            p.communicate()
            fail("the job did not end within 60 s")
        if p.returncode != 3:
            fail(f"exit {p.returncode}, want 3\n{stderr}")
        hang = json.load(open(out))["hang"]
        ranks = {r["rank"]: r for r in hang["ranks"]}
        stopped = ranks[victim_rank]
        front = max(r["sequence"] for r in hang["ranks"])
        if hang["behind"] != [victim_rank] or stopped["process"] != "stopped":
            fail(f"hang object: {hang}\n{stderr}")
        verb = "is in" if stopped["in_call"] and stopped["sequence"] == front else \
            "is still in" if stopped["in_call"] else "finished"
        want = f"hang: rank {victim_rank} on host {HOST} {verb} allreduce #{stopped['sequence']}"
        if want not in stderr or "(process stopped); the 2 others wait in allreduce #" not in stderr:
            fail(f"no line '{want} ... (process stopped); the 2 others wait in' in:\n{stderr}")
    expect_nothing_left(before)
    print([l for l in stderr.splitlines() if "hang:" in l])


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
