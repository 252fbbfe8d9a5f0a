#!/usr/bin/env python3
"""smddp-bench's table and -J document read as nccl-tests 2.19's output.

Usage: ncclfmt_e2e.py --bench PATH --mpirun PATH TEST

The parser and the validator are written from nccl-tests' formats (its
src/util.cu and common.cu, docs/bench.md "nccl-tests compatibility"), not
from smddp-bench's: a run of an *_perf binary is a section (version line,
`# nThread ...`, one `#  Rank ...` line per rank, the column header, rows of
13 fields, or 21 with -I 1, and the footer ending in `# Collective test
concluded: NAME`); the JSON has version, config with its devices, results
per size, out_of_bounds, average_bus_bandwidth, errors, end_time.
"""
import argparse
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time

ARGS = None
SEED = int(os.environ.get("SMDDP_TEST_SEED") or int.from_bytes(os.urandom(4), "little"))
PROGRAMS = {"allreduce": "all_reduce_perf", "allgather": "all_gather_perf", "reducescatter": "reduce_scatter_perf",
            "broadcast": "broadcast_perf", "reduce": "reduce_perf", "alltoall": "alltoall_perf",
            "alltoallv": "alltoallv_perf", "gather": "gather_perf", "scatter": "scatter_perf",
            "sendrecv": "sendrecv_perf", "barrier": "barrier_perf"}


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


def mpirun(np, *bench_args):
    return [ARGS.mpirun, "--oversubscribe", "--bind-to", "none", "-np", str(np), ARGS.bench, *bench_args,
            "--seed", str(SEED)]


def run(cmd, timeout=300):
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    return r


def ok_run(cmd, want=0):
    r = run(cmd)
    if r.returncode != want:
        fail(f"exit {r.returncode} (want {want}) for {' '.join(cmd)}\n{r.stdout[-3000:]}\n{r.stderr[-2000:]}")
    return r


# ---- the table, as nccl-tests prints it -------------------------------------

NUM = r"-?[0-9.]+(?:e[+-]?\d+)?"
OOB = re.compile(r"^# Out of bounds values : (\d+) (OK|FAILED)$")
AVG = re.compile(r"^# Avg bus bandwidth    : (\S+) (OK|FAILED)?$")
NTHREAD = re.compile(r"^# nThread (\d+) nGpus (\d+) minBytes (\d+) maxBytes (\d+) step: (\S+)\((factor|bytes)\) "
                     r"warmup iters: (\d+) iters: (\d+) agg iters: (\d+) validation: (\d+) graph: (\d+) "
                     r"unalign: (\d+)$")
RANK = re.compile(r"^#  Rank +(\d+) Group +(\d+) Pid +(\d+) on +(\S+) device +(-?\d+) \[([^\]]+)\] (.+)$")


def parse_sections(stdout, per_iter=False):
    """[{"program", "preamble": {...}, "ranks": [...], "rows": [[fields]], "oob", "avg", "verdict"}]."""
    sections, cur = [], None
    for line in stdout.splitlines():
        if line.startswith("# Collective test starting: "):
            if cur is not None:
                fail(f"section {cur['program']} not concluded before {line!r}")
            cur = {"program": line.split(": ", 1)[1], "nthread": None, "ranks": [], "rows": [], "oob": None,
                   "avg": None, "verdict": None, "header": False}
            continue
        if cur is None:
            continue
        if line.startswith("# Collective test concluded: "):
            if line.split(": ", 1)[1] != cur["program"]:
                fail(f"section {cur['program']} concluded as {line!r}")
            sections.append(cur)
            cur = None
            continue
        if line.startswith("#"):
            if m := NTHREAD.match(line):
                cur["nthread"] = m.groups()
            elif m := RANK.match(line):
                cur["ranks"].append(m.groups())
            elif m := OOB.match(line):
                cur["oob"] = int(m.group(1))
            elif m := AVG.match(line):
                cur["avg"], cur["verdict"] = m.group(1), m.group(2)
            elif re.match(r"^# +size +count +type +redop +root +(time|cputime) +algbw +busbw +#wrong", line):
                cur["header"] = line.split()[1:]
            continue
        if not line.strip():
            continue
        f = line.split()
        width = 5 + 2 * (8 if per_iter else 4)
        if len(f) < width:
            fail(f"row of {len(f)} fields: {line!r}")
        for i in (0, 1, 4):
            if not re.fullmatch(r"-?\d+", f[i]):
                fail(f"field {i} of {line!r} is not an integer")
        per = 8 if per_iter else 4
        for p in range(2):
            base = 5 + p * per
            cells = f[base:base + per]
            for k, cell in enumerate(cells):
                if k == 3:
                    if not re.fullmatch(r"\d+|N/A", cell):
                        fail(f"#wrong {cell!r} in {line!r}")
                elif not re.fullmatch(NUM, cell) and cell != "N/A":
                    fail(f"cell {cell!r} in {line!r}")
        cur["rows"].append(f)
    if cur is not None:
        fail(f"section {cur['program']} never concluded")
    return sections


def check_section(sec, nranks, per_iter=False, extras=0):
    if sec["nthread"] is None or len(sec["ranks"]) != nranks or not sec["header"]:
        fail(f"{sec['program']}: preamble nThread {sec['nthread']}, {len(sec['ranks'])} rank lines, header "
             f"{sec['header']}")
    if [int(r[0]) for r in sec["ranks"]] != list(range(nranks)):
        fail(f"{sec['program']}: rank lines {sec['ranks']}")
    want = 5 + 2 * (8 if per_iter else 4) + extras
    if len(sec["header"]) != want:
        fail(f"{sec['program']}: header of {len(sec['header'])} titles, want {want}: {sec['header']}")
    bad = [r for r in sec["rows"] if len(r) != want]
    if bad or not sec["rows"]:
        fail(f"{sec['program']}: rows of other than {want} fields: {bad[:2]} ({len(sec['rows'])} rows)")
    if sec["oob"] is None or sec["avg"] is None:
        fail(f"{sec['program']}: footer missing: oob {sec['oob']} avg {sec['avg']}")


# ---- the JSON, as nccl-tests writes it --------------------------------------

BOOLSTR = ("true", "false")


def need(obj, key, types, where):
    if key not in obj:
        fail(f"{where}: key {key!r} missing")
    v = obj[key]
    if isinstance(v, bool) or not isinstance(v, types):
        fail(f"{where}.{key}: {type(v).__name__} {v!r}, want {types}")
    return v


def check_nccl_doc(doc, nranks, per_iter, complete=True):
    need(doc, "version", int, "doc")
    need(doc, "start_time", str, "doc")
    if not re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d", doc["start_time"]):
        fail(f"start_time {doc['start_time']!r}")
    if not all(isinstance(a, str) for a in need(doc, "args", list, "doc")):
        fail("args not strings")
    if not all(isinstance(a, str) and "=" in a for a in need(doc, "env", list, "doc")):
        fail("env not KEY=VALUE strings")
    cfg = need(doc, "config", dict, "doc")
    for k in ("nthreads", "ngpus", "minimum_bytes", "maximum_bytes", "warmup_iters", "iterations",
              "aggregated_iterations", "validation", "graph", "per_iter_skip"):
        need(cfg, k, int, "config")
    if ("step_factor" in cfg) == ("step_bytes" in cfg):
        fail(f"config: one of step_factor and step_bytes: {cfg}")
    for k in ("blocking_collectives", "per_iter_timing", "parallel_init"):
        if need(cfg, k, str, "config") not in BOOLSTR:
            fail(f"config.{k} {cfg[k]!r}")
    if cfg["per_iter_timing"] != ("true" if per_iter else "false"):
        fail(f"config.per_iter_timing {cfg['per_iter_timing']}")
    devices = need(cfg, "devices", list, "config")
    if len(devices) != nranks:
        fail(f"{len(devices)} devices for {nranks} ranks")
    for i, d in enumerate(devices):
        for k, t in (("rank", int), ("group", int), ("pid", int), ("hostname", str), ("device", int),
                     ("device_hex", str), ("device_info", str)):
            need(d, k, t, f"devices[{i}]")
        if d["rank"] != i:
            fail(f"devices[{i}].rank {d['rank']}")
    results = need(doc, "results", list, "doc")
    for i, r in enumerate(results):
        w = f"results[{i}]"
        need(r, "size", int, w)
        need(r, "count", int, w)
        need(r, "type", str, w)
        need(r, "redop", str, w)
        if not re.fullmatch(r" *-?\d+", need(r, "root", str, w)):
            fail(f"{w}.root {r['root']!r}")
        need(r, "actual_iterations", int, w)
        need(r, "experiment_name", str, w)
        for p in ("out_of_place", "in_place"):
            if p not in r:
                fail(f"{w}: {p} missing")
            if r[p] is None:
                continue
            for k in ("time", "alg_bw", "bus_bw"):
                need(r[p], k, (int, float), f"{w}.{p}")
            if r[p].get("nwrong", 0) is not None:
                need(r[p], "nwrong", (int, float), f"{w}.{p}")
            key = p + "_per_iter"
            if per_iter != (key in r):
                fail(f"{w}: {key} {'missing' if per_iter else 'present'}")
            if per_iter:
                check_per_iter(r[key], nranks, r["actual_iterations"], f"{w}.{key}")
    oob = need(doc, "out_of_bounds", dict, "doc")
    need(oob, "count", int, "out_of_bounds")
    if need(oob, "okay", str, "out_of_bounds") not in BOOLSTR:
        fail(f"out_of_bounds.okay {oob['okay']!r}")
    avg = need(doc, "average_bus_bandwidth", dict, "doc")
    if not isinstance(avg.get("bandwidth"), (int, float)) and avg.get("bandwidth") != "nan":
        fail(f"average_bus_bandwidth.bandwidth {avg.get('bandwidth')!r}")
    if need(avg, "okay", str, "average_bus_bandwidth") not in BOOLSTR + ("unchecked",):
        fail(f"average_bus_bandwidth.okay {avg['okay']!r}")
    if not all(isinstance(e, str) for e in need(doc, "errors", list, "doc")):
        fail("errors not strings")
    if complete:
        need(doc, "end_time", str, "doc")


def check_per_iter(pi, nranks, iters, where):
    for k in ("min_us", "max_us", "avg_us", "p50_us", "p95_us", "p99_us", "stdev_us", "cv_pct"):
        need(pi, k, (int, float), where)
    need(pi, "skipped_iterations", int, where)
    times = need(pi, "times_us", list, where)
    if len(times) != iters or not all(isinstance(t, (int, float)) and t > 0 for t in times):
        fail(f"{where}.times_us: {times} for {iters} iterations")
    if nranks > 1:
        procs = need(pi, "per_process_max_times_us", list, where)
        if len(procs) != nranks or any(len(p) != iters for p in procs):
            fail(f"{where}.per_process_max_times_us: {len(procs)} rows for {nranks} ranks")
        if any(abs(t - max(p[i] for p in procs)) > 1e-3 for i, t in enumerate(times)):
            fail(f"{where}: times_us is not the max over the process rows")
    s = sorted(times[pi["skipped_iterations"]:])
    avg = sum(s) / len(s)
    if not (s[0] - 1e-9 <= pi["min_us"] <= pi["p50_us"] <= pi["p99_us"] <= pi["max_us"] <= s[-1] + 1e-9):
        fail(f"{where}: min {pi['min_us']} p50 {pi['p50_us']} p99 {pi['p99_us']} max {pi['max_us']} of {s}")
    if abs(pi["avg_us"] - avg) > 1e-6 * max(1, avg) or abs(pi["max_us"] - s[-1]) > 1e-9:
        fail(f"{where}: avg {pi['avg_us']} against {avg}")
    if avg > 0 and abs(pi["cv_pct"] - 100 * pi["stdev_us"] / avg) > 1e-6:
        fail(f"{where}: cv_pct {pi['cv_pct']} is not 100 * stdev / avg")


# ---- the tests --------------------------------------------------------------

def test_table():
    """A single backend: nccl-tests' preamble, 13 fields a row, its footer; the JSON's results match it."""
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "out.json")
        r = ok_run(mpirun(2, "allreduce", "-b", "8", "-e", "1K", "-f", "2", "-c", "1", "-n", "3", "-w", "1",
                          "-J", out))
        doc = json.load(open(out))
    lines = r.stdout.splitlines()
    if not lines or not lines[0].startswith("# smddp-bench version "):
        fail(f"first line {lines[:1]}")
    secs = parse_sections(r.stdout)
    if [s["program"] for s in secs] != ["all_reduce_perf"]:
        fail(f"sections {[s['program'] for s in secs]}")
    s = secs[0]
    check_section(s, 2)
    sizes = [int(f[0]) for f in s["rows"]]
    if sizes != [8 << k for k in range(8)] or any(f[8] != "0" or f[12] != "0" for f in s["rows"]):
        fail(f"rows {s['rows']}")
    if s["oob"] != 0 or s["verdict"] is not None:
        fail(f"footer oob {s['oob']} verdict {s['verdict']}")
    busbw = [float(f[7]) for f in s["rows"]] + [float(f[11]) for f in s["rows"]]
    if abs(float(s["avg"]) - sum(busbw) / len(busbw)) > 0.01 + 0.01 * float(s["avg"]):
        fail(f"Avg bus bandwidth {s['avg']} is not the mean of the rows' busbw {busbw}")
    check_nccl_doc(doc, 2, per_iter=False)
    if [x["size"] for x in doc["results"]] != sizes or not doc["rows"] or not doc["complete"]:
        fail(f"JSON results {[x['size'] for x in doc['results']]} against table sizes {sizes}")
    if len(re.findall(r"^# Avg bus bandwidth", r.stdout, re.M)) != 1:
        fail("more than one line a grep for '# Avg bus bandwidth' finds")
    # -S 1: nccl-tests' timestamp column (date and time) ends each row.
    r = ok_run(mpirun(2, "allreduce", "-b", "8", "-e", "64", "-f", "2", "-c", "1", "-n", "2", "-w", "0", "-S", "1"))
    rows = [l.split() for l in r.stdout.splitlines() if l.strip() and not l.startswith("#")]
    if len(rows) != 4 or any(len(f) != 15 or not re.fullmatch(r"\d{4}-\d\d-\d\d", f[13])
                             or not re.fullmatch(r"\d\d:\d\d:\d\d", f[14]) for f in rows):
        fail(f"-S 1 rows: {rows}")
    if not re.search(r"^#.*#wrong\s+timestamp\s*$", r.stdout, re.M):
        fail("-S 1: no timestamp column title")
    print(f"{len(sizes)} rows of 13 fields, footer and JSON results agree; -S adds the timestamp")


def test_all():
    """`all`: one nccl-tests section per collective, in order, each concluded; barrier has no bandwidth."""
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "out.json")
        r = ok_run(mpirun(2, "all", "-b", "64", "-e", "256", "-c", "1", "-n", "2", "-w", "0", "-J", out))
        doc = json.load(open(out))
    secs = parse_sections(r.stdout)
    names = [s["program"] for s in secs]
    if sorted(names) != sorted(PROGRAMS.values()) or len(set(names)) != len(names):
        fail(f"sections {names}")
    for s in secs:
        check_section(s, 2)
        if s["program"] == "barrier_perf":
            if s["avg"] != "N/A":
                fail(f"barrier section has a bandwidth: {s['avg']}")
        elif float(s["avg"]) <= 0:
            fail(f"{s['program']}: Avg bus bandwidth {s['avg']}")
    if len(re.findall(r"^# Avg bus bandwidth", r.stdout, re.M)) != len(PROGRAMS):
        fail("not one '# Avg bus bandwidth' line per section")
    check_nccl_doc(doc, 2, per_iter=False)
    if {x["collective"] for x in doc["results"]} != set(PROGRAMS) or len(doc["sections"]) != len(PROGRAMS):
        fail(f"JSON collectives {sorted({x['collective'] for x in doc['results']})}")
    # A barrier moves no bytes: the run's average is over the other rows only (issue 15).
    rows = [x for x in doc["rows"] if x["collective"] != "barrier"]
    mean = sum(x["busbw_gbps"] for x in rows) / len(rows)
    if abs(doc["totals"]["avg_busbw_gbps"]["smddp"] - mean) > 1e-9 * max(1, mean):
        fail(f"average {doc['totals']['avg_busbw_gbps']} is not the mean of the non-barrier rows {mean}")
    print(f"{len(secs)} sections: {', '.join(names)}")


def test_barrier_threshold():
    """--min-busbw never fails a barrier: it has no bytes (docs/bench.md)."""
    r = ok_run(mpirun(2, "barrier", "-c", "1", "-n", "2", "-w", "0", "--min-busbw", "1000"), want=0)
    secs = parse_sections(r.stdout)
    if len(secs) != 1 or secs[0]["avg"] != "N/A" or secs[0]["verdict"] is not None:
        fail(f"barrier footer: {secs}")
    r = ok_run(mpirun(2, "barrier", "allreduce", "-b", "1K", "-e", "1K", "-c", "1", "-n", "2", "-w", "0",
                      "--min-busbw", "1e9"), want=2)
    verdicts = {s["program"]: s["verdict"] for s in parse_sections(r.stdout)}
    if verdicts != {"barrier_perf": None, "all_reduce_perf": "FAILED"}:
        fail(f"verdicts {verdicts}")
    print("barrier: N/A and no verdict; allreduce below the minimum: FAILED, exit 2")


def test_per_iter():
    """-I 1: nccl-tests' i_min i_max i_p99 i_cv% after each placement; *_per_iter in the JSON."""
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "out.json")
        r = ok_run(mpirun(2, "allgather", "-b", "1K", "-e", "64K", "-f", "4", "-c", "1", "-n", "7", "-w", "1",
                          "--per-iteration", "-J", out))
        doc = json.load(open(out))
        analysis = run([sys.executable, ARGS.analyzer, out, "--all"], timeout=60) if ARGS.analyzer else None
    secs = parse_sections(r.stdout, per_iter=True)
    check_section(secs[0], 2, per_iter=True)
    hdr = secs[0]["header"]
    if hdr[9:13] != ["i_min", "i_max", "i_p99", "i_cv%"] or hdr[17:21] != ["i_min", "i_max", "i_p99", "i_cv%"]:
        fail(f"header {hdr}")
    check_nccl_doc(doc, 2, per_iter=True)
    for f, x in zip(secs[0]["rows"], doc["results"]):
        pi = x["out_of_place_per_iter"]
        if abs(float(f[9]) - pi["min_us"]) > 0.01 + 0.01 * pi["min_us"] or \
                abs(float(f[11]) - pi["p99_us"]) > 0.01 + 0.01 * pi["p99_us"]:
            fail(f"table {f[9:13]} against JSON {pi}")
    if analysis:
        a = analysis
        print(a.stdout[-2500:])
        if a.returncode != 0 or "Consistency" not in a.stdout or "PASS" not in a.stdout:
            fail(f"nccl-tests' analyzer: exit {a.returncode}\n{a.stderr[-1500:]}")
    print(f"{len(doc['results'])} results with per-iteration objects of {doc['config']['iterations']} samples")


def test_compare():
    """Two backends: our columns after nccl-tests', one '# Avg bus bandwidth' line, one document each."""
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "out.json")
        r = ok_run(mpirun(2, "allreduce", "-b", "1K", "-e", "4K", "-f", "2", "-c", "1", "-n", "2", "-w", "0",
                          "--backend", "smddp,mpi", "-J", out))
        main, other = json.load(open(out)), json.load(open(os.path.join(d, "out.mpi.json")))
    secs = parse_sections(r.stdout)
    check_section(secs[0], 2, extras=3)
    if {f[13] for f in secs[0]["rows"]} != {"smddp", "mpi"} or "# ratio:" not in r.stdout:
        fail(f"backend column {[f[13] for f in secs[0]['rows']]} or the ratio's meaning missing")
    if len(re.findall(r"^# Avg bus bandwidth", r.stdout, re.M)) != 1 or \
            not re.search(r"^# mpi average bus bandwidth : \S+$", r.stdout, re.M):
        fail("the second backend's average is not on its own, differently named line")
    for doc, backend in ((main, "smddp"), (other, "mpi")):
        check_nccl_doc(doc, 2, per_iter=False)
        if doc["backend"] != backend or [x["size"] for x in doc["results"]] != [1024, 2048, 4096] or \
                {x["backend"] for x in doc["results"]} != {backend}:
            fail(f"{backend}'s document: {[(x['size'], x['backend']) for x in doc['results']]}")
    if {x["backend"] for x in main["rows"]} != {"smddp", "mpi"} or {x["backend"] for x in other["rows"]} != {"mpi"}:
        fail("the first document's rows are not every backend's, or the second's not its own")
    print("16 fields, one nccl-tests average line, out.json and out.mpi.json")


def wait_for_results(p, out, deadline_s=60):
    deadline = time.time() + deadline_s
    while time.time() < deadline:
        if p.poll() is not None:
            fail(f"run ended (exit {p.returncode}) before the kill")
        try:
            if json.load(open(out))["results"]:
                return
        except (OSError, ValueError, KeyError):
            pass
        time.sleep(0.2)
    p.kill()
    fail(f"no result in {out} within {deadline_s} s")


def rank_pids(binary):
    """The rank processes (children of a supervisor running the same binary)."""
    parents = {}
    for e in os.listdir("/proc"):
        if not e.isdigit():
            continue
        try:
            if open(f"/proc/{e}/cmdline", "rb").read().split(b"\0")[0].decode(errors="replace") != binary:
                continue
            parents[int(e)] = int(open(f"/proc/{e}/stat").read().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
    return sorted(pid for pid, ppid in parents.items() if ppid in parents)


def rank_of(pid):
    env = open(f"/proc/{pid}/environ", "rb").read().split(b"\0")
    for kv in env:
        if kv.startswith(b"OMPI_COMM_WORLD_RANK="):
            return int(kv.split(b"=", 1)[1])
    return -1


def crash(victim_rank):
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "out.json")
        cmd = mpirun(2, "allreduce", "-b", "1K", "-e", "64M", "-f", "2", "-c", "1", "-n", "50", "-w", "1",
                     "-T", "20", "--per-iteration", "-J", out)
        cmd[1:1] = ["--mca", "orte_abort_on_non_zero_status", "0"]
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            wait_for_results(p, out)
            time.sleep(1.5)  # more rows, and a periodic rewrite
            victims = [pid for pid in rank_pids(ARGS.bench) if rank_of(pid) == victim_rank]
            if not victims:
                fail(f"rank {victim_rank} not found")
            os.kill(victims[0], signal.SIGKILL)
            _, stderr = p.communicate(timeout=120)
            print("\n".join(stderr.splitlines()[-4:]))
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()
        if p.returncode == 0:
            fail("the run succeeded although a rank was killed")
        text = open(out).read()
        try:
            doc = json.loads(text)
        except ValueError as e:
            fail(f"not valid JSON after rank {victim_rank} was killed: {e}")
        check_nccl_doc(doc, 2, per_iter=True, complete=False)
        if doc["complete"] or not doc["results"] or not doc["rows"]:
            fail(f"complete {doc['complete']}, {len(doc['results'])} results after the crash")
        leftovers = [f for f in os.listdir(d) if f != "out.json"]
        # (A writer killed inside a rewrite may leave its temporary; a survivor must not.)
        if leftovers and victim_rank != 0:
            fail(f"files left beside the document: {leftovers}")
        return doc


def test_crash_peer():
    """A peer killed mid-sweep: rank 0 ends the document; it is valid and holds every row done."""
    doc = crash(1)
    if not doc["errors"]:
        fail("the error is not in the document's errors")
    print(f"{len(doc['results'])} results, errors {doc['errors'][:1]}")


def test_crash_writer():
    """Rank 0, the writer, killed mid-sweep: the document it last wrote is whole and valid."""
    doc = crash(0)
    print(f"{len(doc['results'])} results in the last document written before the kill")


def main():
    global ARGS
    print(f"seed {SEED} (SMDDP_TEST_SEED={SEED} replays it)")
    parser = argparse.ArgumentParser()
    parser.add_argument("--bench", required=True)
    parser.add_argument("--mpirun", required=True)
    parser.add_argument("--analyzer", help="nccl-tests' tools/analyze_perf_json.py, run on the -I JSON if given")
    parser.add_argument("test")
    ARGS = parser.parse_args()
    globals()["test_" + ARGS.test]()
    print("PASS", ARGS.test)


if __name__ == "__main__":
    main()
