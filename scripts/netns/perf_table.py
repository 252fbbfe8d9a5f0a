#!/usr/bin/env python3
"""Renders one measure.sh run as markdown: link capacity, p50 time and bus
bandwidth per size for each smddp algorithm and MPI_Allreduce, and the
issue's targets checked against those numbers. Times are per-iteration
medians (p50): the machine is shared, and means follow its outliers."""
import argparse
import json
import os

ALGOS = ["sharded", "ring", "hierarchical", "auto"]
SHOWN = [8, 64, 512, 4 << 10, 32 << 10, 64 << 10, 256 << 10, 1 << 20, 4 << 20, 16 << 20, 64 << 20,
         256 << 20]


def human(n):
    for unit, size in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size:
            return f"{n // size} {unit}"
    return f"{n} B"


def rows(path):
    try:
        doc = json.load(open(path))
    except (OSError, ValueError):
        return {}, 0
    out = {}
    for r in doc.get("rows", []):
        if r.get("wrong", 0) != 0:
            raise SystemExit(f"{path}: wrong values at {r['bytes']} B")
        out[r["bytes"]] = (r["per_iteration"]["p50_us"], r.get("algorithm", ""))
    return out, doc.get("nranks", 0)


def link(path, bidir):
    try:
        end = json.load(open(path))["end"]
    except (OSError, ValueError, KeyError):
        return None
    if bidir:
        return (end["sum_received"]["bits_per_second"] + end["sum_received_bidir_reverse"]["bits_per_second"]) / 2
    return end["sum_received"]["bits_per_second"]


def main():
    p = argparse.ArgumentParser()
    for a in ("--dir", "--hosts", "--shaping", "--load", "--cpus", "--command"):
        p.add_argument(a, required=True)
    a = p.parse_args()
    data = {}
    nranks = 0
    for name in ALGOS + ["mpi"]:
        data[name], n = rows(os.path.join(a.dir, name + ".json"))
        nranks = nranks or n
    bus = 2 * (nranks - 1) / nranks if nranks else 1
    one, both = link(os.path.join(a.dir, "iperf_one.json"), False), link(os.path.join(a.dir, "iperf_bidir.json"), True)
    gbs = lambda bits: bits / 8e9 if bits else float("nan")

    print(f"### {a.hosts} hosts x 2 ranks, {'unshaped' if a.shaping == 'none' else a.shaping}\n")
    print(f"`{a.command}` ({a.cpus} CPUs, load average {a.load})\n")
    print(f"Link (iperf3, host 0 -> host 1, one TCP stream): {gbs(one):.2f} GB/s one way; "
          f"{gbs(both):.2f} GB/s per direction with both directions busy.\n")
    print("p50 time per call in µs (below 64 KiB) or bus bandwidth in GB/s (from 64 KiB), "
          "busbw = bytes/p50 x 2(n-1)/n:\n")
    print("| size | sharded | ring | hierarchical | auto (chose) | MPI_Allreduce | best smddp / MPI |")
    print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    best_large = 0.0
    verdicts = []
    for size in SHOWN:
        if size not in data["mpi"] and not any(size in data[x] for x in ALGOS):
            continue
        cells = []
        def fmt(t):
            if t is None:
                return "-"
            return f"{t:.0f}" if size < (64 << 10) else f"{size / t / 1e3 * bus:.3f}"
        best = None
        for name in ALGOS:
            t, chose = data[name].get(size, (None, ""))
            cells.append(fmt(t) + (f" ({chose})" if name == "auto" and t else ""))
            if t and (best is None or t < best):
                best = t
        mpi = data["mpi"].get(size, (None, ""))[0]
        speedup = mpi / best if mpi and best else float("nan")
        if size >= (64 << 10) and best:
            verdicts.append((size, speedup))
        if size >= (64 << 20) and best:
            best_large = max(best_large, size / best / 1e3 * bus)
        print(f"| {human(size)} | " + " | ".join(cells) + f" | {fmt(mpi)} | {speedup:.2f}x |")
    print()
    large = [s for s, _ in verdicts if s >= (64 << 20)]
    if not large:
        print("Large messages (64 MiB and up): this sweep has no such row (raise -e to judge them).")
    elif one:
        print(f"Large messages (64 MiB and up): best busbw {best_large:.3f} GB/s = "
              f"{100 * best_large / gbs(one):.0f}% of the one-way link, "
              f"{100 * best_large / gbs(both):.0f}% of the per-direction rate with both directions busy.")
    else:
        print(f"Large messages (64 MiB and up): best busbw {best_large:.3f} GB/s (the link was not measured).")
    if not verdicts:
        print("Best smddp against MPI from 64 KiB: not judged, the sweep has no row of 64 KiB or more.\n")
        return
    behind = [human(s) for s, x in verdicts if not x >= 1.0]
    slow_large = [human(s) for s, x in verdicts if s >= (64 << 20) and not x >= 1.5]
    large_verdict = ("not judged (no row of 64 MiB or more)" if not large else
                     "yes" if not slow_large else "no at " + ", ".join(slow_large))
    print(f"Best smddp ahead of MPI at every size from 64 KiB: {'yes' if not behind else 'no, behind at ' + ', '.join(behind)}; "
          f"at least 1.5x from 64 MiB: {large_verdict}.\n")


if __name__ == "__main__":
    main()
