#!/usr/bin/env python3
"""scripts/netns/regret_table.py computes regret and the ratio against Open
MPI's best from the median of each column's rounds: synthetic result files
whose answers are known, one slow round that must not count, a failed
(unreadable) run that leaves a gap, in-place and 0 B rows left out, a
column in regret.sh's two sweep files read as one, and rows with wrong
values that stop it."""
import json
import os
import shutil
import subprocess
import sys
import tempfile

SCRIPT = os.path.join(os.path.dirname(__file__), "..", "..", "..", "scripts", "netns", "regret_table.py")
K64, M1 = 64 << 10, 1 << 20


def write(d, column, times, wrong=0, sweep=""):
    """times: {bytes: [p50 of round 0, round 1, ...]}; sweep: regret.sh's ".small" or ".large" files."""
    rounds = max(len(v) for v in times.values())
    for k in range(rounds):
        rows = [{"bytes": b, "wrong": wrong, "placement": "out-of-place", "per_iteration": {"p50_us": v[k]}}
                for b, v in times.items() if k < len(v)]
        # In-place rows of the same run, 1000x slower: never part of a cell.
        rows += [dict(r, placement="in-place", per_iteration={"p50_us": r["per_iteration"]["p50_us"] * 1000})
                 for r in rows]
        with open(os.path.join(d, f"{column}.r{k}{sweep}.json"), "w") as f:
            json.dump({"rows": rows}, f)


def run(d):
    return subprocess.run([sys.executable, SCRIPT, "--dir", d, "--command", "test"], capture_output=True, text=True)


def expect(out, *needles):
    for n in needles:
        if n not in out:
            sys.exit(f"FAIL: {n!r} not in:\n{out}")


with tempfile.TemporaryDirectory() as root:
    d = os.path.join(root, "none", "2x2", "allreduce")
    os.makedirs(d)
    # Default: 100 us at 64 KiB (ring would be 80: regret 1.25), 50 at 1 MiB (the best).
    write(d, "default", {K64: [100, 100, 100], M1: [50, 50, 50]})
    write(d, "algo-ring", {K64: [80, 80, 80], M1: [60, 60, 60]})
    # One slow round of halving_doubling (median 50 at 1 MiB: level with the default).
    write(d, "algo-halving_doubling", {K64: [90, 90, 90], M1: [50, 500, 50]})
    # Open MPI: default 200/100; its ring faster than ours at 64 KiB (50 us: we are behind).
    write(d, "mpi", {K64: [200, 200, 200], M1: [100, 100, 100]})
    write(d, "mpi-ring", {K64: [50, 50, 50], M1: [75, 75, 75]})
    with open(os.path.join(d, "mpi-two_proc.r0.json"), "w") as f:
        f.write('{"rows": [')  # a run that died mid-write: a gap, not a failure
    r = run(d.rsplit(os.sep, 3)[0])
    if r.returncode != 0:
        sys.exit(f"FAIL: exit {r.returncode}: {r.stderr}")
    out = r.stdout
    expect(out, "| 64 KiB | 100.0 | ring 80.0 | 1.25 | ring 50.0 | 0.50x |",
           "| 1 MiB | 50.0 | halving_doubling 50.0 | 1.00 | ring 75.0 | 1.50x |",
           "| none | 2x2 | allreduce | 1.12 | 1.25 | 64 KiB |", "### 2 hosts x 2 ranks, unshaped")
    # regret.sh's two sweeps per column: a small one and a large one, one row each.
    s = os.path.join(root, "1gbit", "4x2", "broadcast")
    os.makedirs(s)
    # A 0 B row (under one element per rank) is left out: it moves nothing.
    write(s, "default", {0: [1, 1], 8: [20, 20]}, sweep=".small")
    write(s, "default", {K64: [90, 90]}, sweep=".large")
    write(s, "algo-chain", {0: [0.1, 0.1], 8: [10, 10]}, sweep=".small")
    write(s, "algo-chain", {K64: [90, 90]}, sweep=".large")
    write(s, "mpi", {8: [40, 40]}, sweep=".small")
    write(s, "mpi", {K64: [180, 180]}, sweep=".large")
    r = run(root)
    if r.returncode != 0:
        sys.exit(f"FAIL: exit {r.returncode}: {r.stderr}")
    expect(r.stdout, "| 8 B | 20.0 | chain 10.0 | 2.00 | default 40.0 | 2.00x |",
           "| 64 KiB | 90.0 | chain 90.0 | 1.00 | default 180.0 | 2.00x |", "| 1gbit | 4x2 | broadcast | 1.50 | 2.00 |")
    if "| 0 B |" in r.stdout:
        sys.exit(f"FAIL: a 0 B row in:\n{r.stdout}")
    shutil.rmtree(os.path.join(root, "1gbit"))
    # Wrong values in any column stop the table: its times mean nothing.
    write(d, "algo-ring", {K64: [80]}, wrong=3)
    r = run(d.rsplit(os.sep, 3)[0])
    if r.returncode == 0 or "wrong values" not in r.stderr:
        sys.exit(f"FAIL: wrong values accepted: {r.returncode} {r.stdout} {r.stderr}")
print("ok")
