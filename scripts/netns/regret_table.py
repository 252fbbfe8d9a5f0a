#!/usr/bin/env python3
"""Renders scripts/netns/regret.sh's results as markdown.

DIR/SHAPING/HOSTSxRANKS/COLLECTIVE/COLUMN.rK.json are smddp-bench -J files
(their out-of-place rows):
COLUMN is `default` (no flags), `algo-NAME` (an smddp algorithm forced),
`mpi` (Open MPI's default decision) or `mpi-NAME` (one of its tuned
algorithms forced). Each cell is the median over rounds of the per-iteration
p50. Per size:
  regret   = default's time / the best forced smddp algorithm's time
             (1.00: the default took the best; 1.25: 25% slower than it)
  vs MPI   = Open MPI's best time (default or tuned) / default's time
             (above 1: the default is faster)
A summary table gives, per placement, the median and worst regret, and the
sizes from 64 KiB where the default is behind Open MPI's best."""
import argparse
import collections
import glob
import json
import os
import re
import statistics
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "common", "python"))
import smddp_safeio  # noqa: E402  (bounded, finite JSON reads)

# COLUMN.rK.json, or one of regret.sh's two sweeps: COLUMN.rK.small.json
# (8 B-32 KiB) and COLUMN.rK.large.json (64 KiB on).
ROUND = re.compile(r"^(?P<column>.+)\.r\d+(?:\.(?:small|large))?\.json$")
BANDWIDTH_FROM = 64 << 10


def human(n):
    for unit, size in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size and n % size == 0:
            return f"{n // size} {unit}"
    return f"{n} B"


def columns(directory):
    """{column: {bytes: median p50 us}} of one collective's directory."""
    times = collections.defaultdict(lambda: collections.defaultdict(list))
    for path in sorted(glob.glob(os.path.join(directory, "*.json"))):
        m = ROUND.match(os.path.basename(path))
        if not m:
            continue
        try:
            doc = smddp_safeio.load_json(path, "result file")
        except smddp_safeio.UsageError:
            continue  # a failed run leaves no file or a partial one: that column has a gap
        for r in doc.get("rows", []) if isinstance(doc, dict) else []:
            if r.get("wrong", 0):
                raise smddp_safeio.UsageError(f"{path}: wrong values at {r.get('bytes')} B: its times mean nothing")
            if r.get("placement", "out-of-place") != "out-of-place":
                continue  # one placement per cell: in-place rows of a run of both are left out
            p50 = (r.get("per_iteration") or {}).get("p50_us")
            # A 0 B row (the size under one element per rank: allgather of
            # 8 B on 4 ranks) times calls that move nothing: no regret to show.
            if isinstance(p50, (int, float)) and isinstance(r.get("bytes"), int) and r["bytes"] > 0:
                times[m.group("column")][r["bytes"]].append(p50)
    return {c: {b: statistics.median(v) for b, v in by.items()} for c, by in times.items()}


def best(cols, prefix, size):
    """(time, name) of the fastest column starting with prefix at size."""
    found = [(t[size], c) for c, t in cols.items() if c.startswith(prefix) and size in t]
    return min(found) if found else (None, "")


def render(directory, shaping, placement, coll, out, summary):
    cols = columns(directory)
    default = cols.get("default", {})
    if not default:
        out.append(f"#### {coll}: no default column measured\n")
        return
    out.append(f"#### {coll}\n")
    out.append("| size | default (us) | best forced | regret | Open MPI's best | default vs Open MPI's best |")
    out.append("| ---: | ---: | --- | ---: | --- | ---: |")
    regrets, behind = [], []
    for size in sorted(default):
        t = default[size]
        forced_t, forced = best(cols, "algo-", size)
        mpi_t = [(tt[size], c) for c, tt in cols.items() if (c == "mpi" or c.startswith("mpi-")) and size in tt]
        mt, mname = min(mpi_t) if mpi_t else (None, "")
        regret = t / forced_t if forced_t else None
        if regret is not None:
            regrets.append(regret)
        ratio = mt / t if mt else None
        if ratio is not None and ratio < 1 and size >= BANDWIDTH_FROM:
            behind.append(human(size))
        out.append(f"| {human(size)} | {t:.1f} | {forced[5:] + f' {forced_t:.1f}' if forced else '-'} | "
                   f"{f'{regret:.2f}' if regret is not None else '-'} | "
                   f"{(mname[4:] or 'default') + f' {mt:.1f}' if mname else '-'} | "
                   f"{f'{ratio:.2f}x' if ratio is not None else '-'} |")
    out.append("")
    summary.append((shaping, placement, coll, regrets, behind))


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--dir", required=True)
    p.add_argument("--load", default="")
    p.add_argument("--cpus", default="")
    p.add_argument("--command", default="")
    a = p.parse_args(argv)
    out, summary = [], []
    for shaping in sorted(os.listdir(a.dir)):
        for placement in sorted(os.listdir(os.path.join(a.dir, shaping)), key=lambda s: tuple(map(int, s.split("x")))):
            hosts, ranks = placement.split("x")
            out.append(f"### {hosts} hosts x {ranks} rank{'s' if ranks != '1' else ''}, {'unshaped' if shaping == 'none' else shaping}\n")
            base = os.path.join(a.dir, shaping, placement)
            for coll in sorted(os.listdir(base)):
                render(os.path.join(base, coll), shaping, placement, coll, out, summary)
    head = [f"`{a.command}` ({a.cpus} CPUs, load average {a.load})\n" if a.command else "",
            "| shaping | placement | collective | median regret | worst regret | behind Open MPI's best from 64 KiB |",
            "| --- | --- | --- | ---: | ---: | --- |"]
    for shaping, placement, coll, regrets, behind in summary:
        med = f"{statistics.median(regrets):.2f}" if regrets else "-"
        worst = f"{max(regrets):.2f}" if regrets else "-"
        head.append(f"| {shaping} | {placement} | {coll} | {med} | {worst} | {', '.join(behind) or 'none'} |")
    print("\n".join(head + [""] + out))
    return 0


if __name__ == "__main__":
    sys.exit(smddp_safeio.run_main("regret_table.py", main))
