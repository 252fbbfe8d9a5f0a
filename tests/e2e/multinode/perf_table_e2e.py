#!/usr/bin/env python3
"""scripts/netns/perf_table.py judges only the sizes its sweep has: a sweep
without 64 KiB or 64 MiB rows gets "not judged", never a "yes" or a 0.000
GB/s best; a sweep with them gets its verdicts from the numbers, against
the fastest of MPI's default and its forced tuned algorithms."""
import json
import os
import subprocess
import sys
import tempfile

SCRIPT = os.path.join(os.path.dirname(__file__), "..", "..", "..", "scripts", "netns", "perf_table.py")


def render(sizes, mpi_factor, tuned_factor=None, link_gbs=None, rounds=None):
    """`rounds`: {column: factor of each round}; every column is then written as rounds
    (NAME.rK.json, three unless named) instead of one NAME.json."""
    with tempfile.TemporaryDirectory() as d:
        if link_gbs:
            with open(os.path.join(d, "iperf_one.json"), "w") as f:
                json.dump({"end": {"sum_received": {"bits_per_second": link_gbs * 8e9}}}, f)
        names = ["sharded", "ring", "halving_doubling", "hierarchical", "auto", "mpi"] + (["mpi-ring"] if tuned_factor else [])
        for name in names:
            factor = {"mpi": mpi_factor, "mpi-ring": tuned_factor}.get(name, 1.0)
            for k, round_factor in enumerate((rounds or {}).get(name, [1.0, 1.0, 1.0] if rounds else [1.0])):
                rows = [{"bytes": b, "wrong": 0, "algorithm": "ring",
                         "per_iteration": {"p50_us": (10.0 + b / 1000.0) * factor * round_factor}} for b in sizes]
                with open(os.path.join(d, name + (f".r{k}" if rounds else "") + ".json"), "w") as f:
                    json.dump({"nranks": 4, "rows": rows}, f)
        out = subprocess.run([sys.executable, SCRIPT, "--dir", d, "--hosts", "2", "--shaping", "none",
                              "--load", "0", "--cpus", "2", "--command", "test"],
                             capture_output=True, text=True, check=True).stdout
    return out


def expect(out, *needles):
    for n in needles:
        if n not in out:
            sys.exit(f"FAIL: {n!r} not in:\n{out}")


small = render([8, 64, 512, 4096], 2.0)
expect(small, "this sweep has no such row", "not judged, the sweep has no row of 64 KiB")
if "yes" in small or "0.000 GB/s" in small:
    sys.exit(f"FAIL: a verdict without the rows for it:\n{small}")
mid = render([64 << 10, 1 << 20], 2.0)
expect(mid, "ahead of the best MPI at every size from 64 KiB: yes", "at least 1.5x from 64 MiB: not judged",
       "From 16 MiB: this sweep has no such row", "tuned algorithm forced (none run)")
behind = render([64 << 10, 64 << 20], 0.5)
expect(behind, "no, behind at 64 KiB, 64 MiB", "at least 1.5x from 64 MiB: no at 64 MiB", "best busbw")
# MPI's default is slower, its forced ring faster: the ring is what counts.
tuned = render([64 << 10, 16 << 20, 64 << 20], 2.0, 0.5)
expect(tuned, "no, behind at 64 KiB, 16 MiB, 64 MiB", "forced (ring)", "| 0.50x |", "(ring) | 0.50x")
expect(render([64 << 10, 64 << 20], 2.0, 4.0), "ahead of the best MPI at every size from 64 KiB: yes", "| 2.00x |")
# busbw 1.499 GB/s at 16 MiB and 1.4998 at 64 MiB (p50 = 10 us + 1 ns/B, 4 ranks) on a 1.6 GB/s link.
expect(render([16 << 20, 64 << 20], 2.0, link_gbs=1.6),
       "From 16 MiB: auto reaches at least 94% of the one-way link (lowest at 16 MiB)")
# Rounds: each cell is the median of its column's rounds (one slow round
# of MPI's forced ring does not hide that the ring is faster).
with_rounds = render([64 << 10], 2.0, 0.5, rounds={"mpi-ring": [1.0, 9.0, 1.0]})
expect(with_rounds, "forced (ring)", "(ring) | 0.50x")
print("perf_table: verdicts follow the rows")
