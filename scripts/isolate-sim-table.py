#!/usr/bin/env python3
"""Scores `smddp-diag isolate --simulate` over fleet sizes and fault mixes
(docs/diag.md, "Simulation"): recall, false positives, rounds and simulated
time of isolate's schedule and of the cluster-health-scanner comparison
(--schedule chs) over the same simulated fabrics, from each run's JSON.

  isolate-sim-table.py --bin build/diag/smddp-diag [--seeds 100] [--sizes 16,64,...]
                       [--counts 0,1,...] [--kinds slow-node,...] [--jobs 2]
  isolate-sim-table.py --noise-from REPORT.json...   # noise samples from real runs

Scoring, the same for both schedules: a node fault (slow-node, stall, a
flat fabric's slow access link) is found when its host is named for its own
numbers (not only for a link); a fault of a link between network nodes when
a named link has exactly one end below it. A named host that no injected
fault explains is a false positive. Racks: 16 nodes each (one rack at 16).
"""
import argparse
import concurrent.futures
import json
import re
import statistics
import subprocess
import sys
import time

LINK = re.compile(r"link to (\S+) \(both ends pass")


def score(doc):
    """(found, injected) per fault kind, and the false-positive hosts."""
    named = {}
    for n in doc["nodes"]:
        if not n["healthy"]:
            reason = next((c["reason"] for c in n["checks"] if c["name"] == "isolate" and c["status"] == "fail"), "")
            named[n["host"]] = reason
    node_level = {h for h, r in named.items() if r and not r.startswith("link to ")}
    links = {(h, x) for h, r in named.items() for x in LINK.findall(r)}
    faults = doc["simulation"]["faults"]
    node_faults = {f["host"] for f in faults if "host" in f}
    node_faults |= {f["hosts"][0] for f in faults if "hosts" in f and len(f["hosts"]) == 1}
    uplinks = [set(f["hosts"]) for f in faults if "hosts" in f and len(f["hosts"]) > 1]

    def crosses(a, b):
        return any((a in h) != (b in h) for h in uplinks)

    per_kind = {}
    for f in faults:
        if "host" in f:
            hit = f["host"] in node_level
        elif len(f["hosts"]) == 1:
            hit = f["hosts"][0] in node_level
        else:
            h = set(f["hosts"])
            hit = any((a in h) != (b in h) for a, b in links)
        found, total = per_kind.get(f["kind"], (0, 0))
        per_kind[f["kind"]] = (found + hit, total + 1)
    wrong = set()
    for h, r in named.items():
        if h in node_level:
            if h not in node_faults:
                wrong.add(h)
        elif not all(crosses(h, x) or h in node_faults or x in node_faults for x in LINK.findall(r)):
            wrong.add(h)
    return per_kind, len(wrong)


def run_one(args, n, spec, seed, schedule):
    cmd = [args.bin, "isolate", "--simulate", str(n), "--faults", spec, "--seed", str(seed), "--json", "-",
           "--schedule", schedule]
    if n > 16:
        cmd += ["--racks", str(n // 16)]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode == 64 and "to choose from" in r.stderr:
        return None  # more faulty links than the fabric has
    if r.returncode not in (0, 1):
        sys.exit(f"{' '.join(cmd)}: exit {r.returncode}: {r.stderr}")
    doc = json.loads(r.stdout)
    per_kind, fp = score(doc)
    return per_kind, fp, doc["isolate"]["rounds"], doc["simulation"]["simulated_seconds"]


def cell(args, pool, n, spec, schedule):
    results = list(pool.map(lambda s: run_one(args, n, spec, s, schedule), range(1, args.seeds + 1)))
    if any(r is None for r in results):
        return None
    found = sum(k[0] for r in results for k in r[0].values())
    total = sum(k[1] for r in results for k in r[0].values())
    return {"recall": found / total if total else None, "fp": statistics.mean(r[1] for r in results),
            "rounds_mean": statistics.mean(r[2] for r in results), "rounds_max": max(r[2] for r in results),
            "seconds": statistics.mean(r[3] for r in results)}


def noise_from(paths):
    """BUSBW_RATIO STREAM_RATIO per first-pairing pair test, over its run's medians."""
    for p in paths:
        doc = json.load(open(p))
        tests = [t for t in doc["isolate"]["tests"] if t["kind"] == "pair" and t["round"] <= 2 and t["error"] is None]
        if len(tests) < 3:
            continue
        mb = statistics.median(t["allreduce_busbw_gbs"] for t in tests)
        ms = statistics.median(t["stream_gbs"] for t in tests)
        for t in tests:
            print(f"{t['allreduce_busbw_gbs'] / mb:.3f} {t['stream_gbs'] / ms:.3f}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin")
    ap.add_argument("--seeds", type=int, default=100)
    ap.add_argument("--sizes", default="16,64,256,1024,4096")
    ap.add_argument("--counts", default="0,1,2,3,4,5")
    ap.add_argument("--kinds", default="slow-node@2.0,slow-link@2.0,stall,flap@4.0")
    ap.add_argument("--healthy", action=argparse.BooleanOptionalAction, default=True, help="the 0-fault row of each size")
    ap.add_argument("--schedules", default="isolate,chs")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--noise-from", nargs="+")
    ap.add_argument("--no-header", action="store_true")
    args = ap.parse_args()
    if args.noise_from:
        noise_from(args.noise_from)
        return
    if not args.bin:
        sys.exit("--bin is required")
    if not args.no_header:
        print("| N | faults | schedule | seeds | recall | FP/run | rounds mean (max) | simulated s |")
        print("|--:|---|---|--:|--:|--:|--:|--:|")
    with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        for n in (int(x) for x in args.sizes.split(",")):
            for kind in args.kinds.split(","):
                name, _, factor = kind.partition("@")
                for count in (int(c) for c in args.counts.split(",")):
                    if count == 0 and (kind != args.kinds.split(",")[0] or not args.healthy):
                        continue  # the healthy row once per size
                    spec = "none" if count == 0 else f"{name}={count}" + (f"@{factor}" if factor else "")
                    for schedule in args.schedules.split(","):
                        t0 = time.time()
                        c = cell(args, pool, n, spec, schedule)
                        if c is None:
                            print(f"| {n} | {spec} | {schedule} | - | n/a: {n // 16 if n > 16 else 1} rack(s) | | | |", flush=True)
                            continue
                        recall = "-" if c["recall"] is None else f"{c['recall']:.3f}"
                        print(f"| {n} | {spec} | {schedule} | {args.seeds} | {recall} | {c['fp']:.3f} | {c['rounds_mean']:.1f} ({c['rounds_max']}) "
                              f"| {c['seconds']:.1f} |", flush=True)
                        print(f"  {n} {spec} {schedule}: {time.time() - t0:.0f} s", file=sys.stderr)


if __name__ == "__main__":
    main()
