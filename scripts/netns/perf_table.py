#!/usr/bin/env python3
"""Renders one measure.sh run as markdown: link capacity, p50 time and bus
bandwidth per size for each smddp algorithm, MPI_Allreduce's default
decision and each of Open MPI's tuned algorithms forced (files
mpi-ALGORITHM.json), and the targets checked against those numbers: smddp
against the best MPI (default or tuned) per size, and the share of the link
from 16 MiB. Times are per-iteration medians (p50): the machine is shared,
and means follow its outliers. A column measured in rounds (measure.sh
--rounds: NAME.rK.json) shows the median of its rounds' p50s per size."""
import argparse
import collections
import glob
import json
import os
import re
import statistics

ALGOS = ["sharded", "ring", "halving_doubling", "hierarchical", "auto"]
SHOWN = [8, 64, 512, 4 << 10, 32 << 10, 64 << 10, 256 << 10, 1 << 20, 4 << 20, 16 << 20, 64 << 20,
         256 << 20]


def human(n):
    for unit, size in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size:
            return f"{n // size} {unit}"
    return f"{n} B"


def rows(directory, name):
    """{bytes: (p50 us, algorithm)} of column NAME (NAME.json, or the median
    over NAME.rK.json and the algorithm most rounds chose), and its ranks."""
    paths = [os.path.join(directory, name + ".json")] + \
        sorted(glob.glob(os.path.join(directory, glob.escape(name) + ".r[0-9]*.json")))
    times, chose, nranks = collections.defaultdict(list), collections.defaultdict(collections.Counter), 0
    for path in paths:
        try:
            doc = json.load(open(path))
        except (OSError, ValueError):
            continue
        nranks = nranks or doc.get("nranks", 0)
        for r in doc.get("rows", []):
            if r.get("wrong", 0) != 0:
                raise SystemExit(f"{path}: wrong values at {r['bytes']} B")
            times[r["bytes"]].append(r["per_iteration"]["p50_us"])
            chose[r["bytes"]][r.get("algorithm", "")] += 1
    return {b: (statistics.median(t), chose[b].most_common(1)[0][0]) for b, t in times.items()}, nranks


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
        data[name], n = rows(a.dir, name)
        nranks = nranks or n
    tuned = {}
    names = {re.sub(r"(\.r\d+)?\.json$", "", os.path.basename(p))[4:] for p in glob.glob(os.path.join(a.dir, "mpi-*.json"))}
    for name in sorted(names):
        tuned[name], _ = rows(a.dir, "mpi-" + name)
    bus = 2 * (nranks - 1) / nranks if nranks else 1
    one, both = link(os.path.join(a.dir, "iperf_one.json"), False), link(os.path.join(a.dir, "iperf_bidir.json"), True)
    gbs = lambda bits: bits / 8e9 if bits else float("nan")

    print(f"### {a.hosts} hosts x 2 ranks, {'unshaped' if a.shaping == 'none' else a.shaping}\n")
    print(f"`{a.command}` ({a.cpus} CPUs, load average {a.load})\n")
    print(f"Link (iperf3, host 0 -> host 1, one TCP stream): {gbs(one):.2f} GB/s one way; "
          f"{gbs(both):.2f} GB/s per direction with both directions busy.\n")
    print("p50 time per call in µs (below 64 KiB) or bus bandwidth in GB/s (from 64 KiB), "
          "busbw = bytes/p50 x 2(n-1)/n; best MPI: the faster of its default decision and every tuned "
          f"algorithm forced ({', '.join(tuned) if tuned else 'none run'}):\n")
    columns = ALGOS[:-1] + ["auto (chose)", "MPI default", "best MPI tuned", "best smddp / best MPI"]
    print("| size | " + " | ".join(columns) + " |")
    print("| ---: |" + " ---: |" * len(columns))
    busbw = lambda size, t: size / t / 1e3 * bus
    best_large = 0.0
    verdicts = []
    link_share = []  # (size, auto busbw, best smddp busbw) from 16 MiB
    for size in SHOWN:
        if size not in data["mpi"] and not any(size in data[x] for x in ALGOS):
            continue
        cells = []
        def fmt(t):
            if t is None:
                return "-"
            return f"{t:.0f}" if size < (64 << 10) else f"{busbw(size, t):.3f}"
        best = None
        for name in ALGOS:
            t, chose = data[name].get(size, (None, ""))
            cells.append(fmt(t) + (f" ({chose})" if name == "auto" and t else ""))
            if t and (best is None or t < best):
                best = t
        mpi = data["mpi"].get(size, (None, ""))[0]
        fastest_tuned = min(((t[size][0], name) for name, t in tuned.items() if size in t), default=(None, ""))
        best_mpi = min((t for t in (mpi, fastest_tuned[0]) if t), default=None)
        speedup = best_mpi / best if best_mpi and best else float("nan")
        if size >= (64 << 10) and best:
            verdicts.append((size, speedup))
        if size >= (64 << 20) and best:
            best_large = max(best_large, busbw(size, best))
        auto = data["auto"].get(size, (None, ""))[0]
        if size >= (16 << 20) and best and auto:
            link_share.append((size, busbw(size, auto), busbw(size, best)))
        tuned_cell = f"{fmt(fastest_tuned[0])} ({fastest_tuned[1]})" if fastest_tuned[0] else "-"
        print(f"| {human(size)} | " + " | ".join(cells) + f" | {fmt(mpi)} | {tuned_cell} | {speedup:.2f}x |")
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
    if link_share and one:
        low_auto = min(link_share, key=lambda x: x[1])
        low_best = min(link_share, key=lambda x: x[2])
        print(f"From 16 MiB: auto reaches at least {100 * low_auto[1] / gbs(one):.0f}% of the one-way link "
              f"(lowest at {human(low_auto[0])}), the best smddp algorithm at least "
              f"{100 * low_best[2] / gbs(one):.0f}% (lowest at {human(low_best[0])}).")
    elif not link_share:
        print("From 16 MiB: this sweep has no such row.")
    if not verdicts:
        print("Best smddp against MPI from 64 KiB: not judged, the sweep has no row of 64 KiB or more.\n")
        return
    behind = [human(s) for s, x in verdicts if not x >= 1.0]
    slow_large = [human(s) for s, x in verdicts if s >= (64 << 20) and not x >= 1.5]
    large_verdict = ("not judged (no row of 64 MiB or more)" if not large else
                     "yes" if not slow_large else "no at " + ", ".join(slow_large))
    print(f"Best smddp ahead of the best MPI at every size from 64 KiB: "
          f"{'yes' if not behind else 'no, behind at ' + ', '.join(behind)}; "
          f"at least 1.5x from 64 MiB: {large_verdict}.\n")


if __name__ == "__main__":
    main()
