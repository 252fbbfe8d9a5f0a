#!/usr/bin/env python3
"""smddp-bench-torch end to end: gloo ranks started torchrun-style, the shared
table/JSON format with smddp-bench, the seeded data against smddp-bench's own
generator, unavailable backends, the SageMaker launcher, the extended-image
build script and the entry's torch stage.

Usage: torch_e2e.py --root REPO --bench PATH --mpirun PATH --data-reference PATH TEST

Run with Debian's /usr/bin/python3 (python3-torch, CPU only). Every
subprocess has a time limit, every rank started here is killed on the way
out, and every test asserts on values it reads back. Runs take a random
--seed, printed first; SMDDP_TEST_SEED=N replays one. Exit 77: skipped.
"""
import argparse
import json
import os
import random
import re
import shlex
import shutil
import socket
import subprocess
import sys
import tempfile
import time

ARGS = None
SKIP = 77
SEED = int(os.environ.get("SMDDP_TEST_SEED") or int.from_bytes(os.urandom(4), "little"))
COLLECTIVES = ["allreduce", "allgather", "reducescatter", "broadcast", "reduce", "alltoall", "barrier"]
DTYPES = ["int8", "uint8", "int32", "uint32", "int64", "uint64", "half", "bfloat16", "float", "double"]
OPS = ["sum", "prod", "min", "max", "avg"]
REDUCING = {"allreduce", "reducescatter", "reduce"}


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


def tool():
    return os.path.join(ARGS.root, "bench/torch/smddp-bench-torch")


def clean_env(**extra):
    """The caller's environment without launcher, SageMaker or smddp settings."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("SMDDP_", "NCCL_", "SM_", "OMPI_", "PMIX_", "SLURM"))
           and k not in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")}
    env.update(extra)
    return env


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def ranks(n, args, timeout=240, env=None, attempts=3):
    """Starts n ranks torchrun-style; returns [(rc, stdout, stderr)] by rank.
    Ranks still running at the deadline, or 30 s after another rank failed,
    are killed by their pid. MASTER_PORT is a free port, but another test on
    this machine may take it first: then rank 0 says so and we try another."""
    for attempt in range(attempts):
        out = _ranks_once(n, args, timeout, env)
        if not any("address already in use" in se.lower() for _, _, se in out[:1]):
            return out
    return out


def _ranks_once(n, args, timeout, env):
    port = free_port()
    procs, files = [], []
    try:
        for r in range(n):
            e = clean_env(RANK=str(r), WORLD_SIZE=str(n), LOCAL_RANK=str(r), LOCAL_WORLD_SIZE=str(n),
                          MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), **(env or {}))
            so, se = tempfile.TemporaryFile("w+"), tempfile.TemporaryFile("w+")
            files.append((so, se))
            procs.append(subprocess.Popen([sys.executable, tool(), *args, "--seed", str(SEED), "-T", "60"], env=e,
                                          stdout=so, stderr=se, text=True))
        deadline, failed_at = time.monotonic() + timeout, None
        while any(p.poll() is None for p in procs):
            now = time.monotonic()
            if failed_at is None and any(p.returncode not in (None, 0) for p in procs):
                failed_at = now
            if now > deadline or (failed_at is not None and now - failed_at > 30):
                break
            time.sleep(0.2)
        hung = [r for r, p in enumerate(procs) if p.poll() is None]
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
        out = []
        for p, (so, se) in zip(procs, files):
            so.seek(0)
            se.seek(0)
            out.append((p.returncode, so.read(), se.read()))
        if hung:
            fail(f"ranks {hung} of {n} still running ({'after a rank failed' if failed_at else f'after {timeout} s'})"
                 f" for {args}:\n" + "\n".join(f"rank {r}: exit {rc}: {se[-600:]}" for r, (rc, _, se) in
                                                enumerate(out)))
        return out
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
        for so, se in files:
            so.close()
            se.close()


def run(cmd, timeout=120, env=None, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env or clean_env(), **kw)


# ---- one parser and one schema for both tools' output ----------------------

# Both tools print nccl-tests 2.19's layout (docs/bench.md, "The table"):
# one section per collective; backend, algorithm and ratio only when backends are compared.
VERSION_LINE = re.compile(r"^# (smddp-bench|smddp-bench-torch) version (\S+) .*backends=(\S+)$")
RANK_LINE = re.compile(r"^#  Rank +(\d+) Group +0 Pid +(\d+) on +(\S+) device +-?\d+ \[(host|cuda)\] "
                       r"(host|cuda) memory, node (\d+)$")
COMMENT_KINDS = [
    ("starting", re.compile(r"^# Collective test starting: [a-z_]+_perf$")),
    ("config", re.compile(r"^# nThread 1 nGpus 1 minBytes \d+ maxBytes \d+ step: \S+\((factor|bytes)\) "
                          r"warmup iters: \d+ iters: \d+ agg iters: \d+ validation: \d+ graph: 0 unalign: \d+$")),
    ("blank", re.compile(r"^#$")),
    ("devices", re.compile(r"^# Using devices$")),
    ("ratio", re.compile(r"^# ratio: the first backend's \(\S+\) busbw over this backend's, .+$")),
    ("placements", re.compile(r"^# +out-of-place +in-place +$")),
    ("columns", re.compile(r"^# +size +count +type +redop +root +time +algbw +busbw +#wrong +time +algbw +busbw "
                           r"+#wrong( +backend +algorithm +ratio)? $")),
    ("units", re.compile(r"^# +\(B\) +\(elements\) +\(us\) +\(GB/s\) +\(GB/s\) +\(us\) +\(GB/s\) +\(GB/s\) *$")),
    ("straggler", re.compile(r"^#  straggler \(\S+, (out-of-place|in-place)\): rank \d+ on \S+ is \d+% slower "
                             r"than the median rank$")),
    ("per-iteration", re.compile(r"^#  per-iteration \(us\): min \S+ p50 \S+ p95 \S+ p99 \S+ max \S+ cv \S+$")),
    ("skipped", re.compile(r"^#  skipped \(\S+\): .+: .+$")),
    ("busbw", re.compile(r"^# Avg bus bandwidth    : \S+ (OK|FAILED)?$")),
    ("busbw-other", re.compile(r"^# \S+ average bus bandwidth : \S+$")),
    ("concluded", re.compile(r"^# Collective test concluded: [a-z_]+_perf$")),
    ("threshold", re.compile(r"^# Below threshold: .+$")),
    ("error", re.compile(r"^# error: .+$")),
]
WRONG_LINE = re.compile(r"^# Out of bounds values : (\d+) (OK|FAILED)$")


def parse_table(stdout, who):
    """{"tool", "version", "nranks", "nnodes", "backends", "kinds", "lines", "wrong"} of either tool's
    table; fails on any line it does not know. A row has nccl-tests' 13 fields, or 16 with
    backend, algorithm and ratio when backends are compared."""
    out = {"tool": None, "version": None, "nranks": 0, "nnodes": 0, "backends": [], "kinds": [], "lines": [],
           "wrong": 0}
    ranks, nodes = set(), set()
    for line in stdout.splitlines():
        if not line.strip():
            out["kinds"].append("end")
            continue
        if m := VERSION_LINE.match(line):
            if out["tool"] not in (None, m.group(1)):
                fail(f"{who}: two tools in one table: {line!r}")
            out["tool"], out["version"], out["backends"] = m.group(1), m.group(2), m.group(3).split(",")
            out["kinds"].append("version")
        elif m := RANK_LINE.match(line):
            ranks.add(int(m.group(1)))
            nodes.add(int(m.group(6)))
            out["kinds"].append("rank")
        elif m := WRONG_LINE.match(line):
            out["wrong"] += int(m.group(1))
            out["kinds"].append("wrong")
        elif line.startswith("#"):
            kind = next((k for k, rx in COMMENT_KINDS if rx.match(line)), None)
            if kind is None:
                fail(f"{who}: unknown comment line {line!r}")
            out["kinds"].append(kind)
        else:
            f = line.split()
            if len(f) not in (13, 16) or not all(re.fullmatch(r"N/A|-?[0-9.]+(e[+-]\d+)?", x) for x in f[5:13]):
                fail(f"{who}: malformed data line {line!r}")
            backend = f[13] if len(f) == 16 else (out["backends"] or ["?"])[0]
            out["lines"].append({"bytes": int(f[0]), "count": int(f[1]), "dtype": f[2], "op": f[3], "root": int(f[4]),
                                 "oop": f[5:9], "ip": f[9:13], "backend": backend,
                                 "algorithm": f[14] if len(f) == 16 else None,
                                 "ratio": float(f[15]) if len(f) == 16 else None})
            out["kinds"].append("data")
    if out["tool"] is None:
        fail(f"{who}: no version line: {stdout[:200]!r}")
    out["nranks"], out["nnodes"] = len(ranks), len(nodes)
    return out


NUM = (int, float)
# smddp-bench's document is nccl-tests' as well (docs/bench.md, JSON): its keys beside ours.
NCCL_TOP = {"version": int, "start_time": str, "args": list, "env": list, "config": dict, "results": list,
            "out_of_bounds": dict, "average_bus_bandwidth": dict, "errors": list, "end_time": str,
            "backend": str, "sections": list}
TOP = {"tool": str, "versions": dict, "argv": list, "environment": dict, "started_utc": str, "nranks": int,
       "nnodes": int, "ranks": list, "devices": dict, "options": dict, "rows": list, "totals": dict, "complete": bool}
TOP_OPTIONAL = {"host_memory_bandwidth_gbps": NUM, "error": str, "skipped": list, "transport": str}
OPTIONS = {"minbytes": int, "maxbytes": int, "stepfactor": float, "stepbytes": int, "iters": int, "warmup": int,
           "check": int, "backends": list, "algorithm": str, "seed": int, "average": int}
ROW = {"row": int, "collective": str, "dtype": str, "op": str, "root": int, "bytes": int, "count": int,
       "backend": str, "algorithm": str, "placement": str, "time_us": float, "algbw_gbps": float,
       "busbw_gbps": float, "wrong": (int, type(None)), "iterations": int, "ratio": float}
ROW_OPTIONAL = {"roof_fraction": float, "per_iteration": dict, "straggler": dict}
TOTALS = {"rows": int, "wrong": int, "avg_busbw_gbps": dict, "below_threshold": bool, "exit_code": int}
# A finished run's failures with their codes (docs/bench.md, JSON), both tools.
TOTALS_OPTIONAL = {"verdicts": list}


def check_keys(obj, required, optional, where):
    if not isinstance(obj, dict):
        fail(f"{where}: not an object")
    for k, t in required.items():
        if k not in obj:
            fail(f"{where}: key {k!r} missing")
        if isinstance(obj[k], bool) and t is not bool:
            fail(f"{where}.{k}: a boolean")
        if not isinstance(obj[k], t) or (t in (float, int) and isinstance(obj[k], bool) and t is not bool):
            fail(f"{where}.{k}: {type(obj[k]).__name__}, expected {t}")
    for k in obj:
        if k not in required and k not in optional:
            fail(f"{where}: unknown key {k!r}")
        if k in optional and not isinstance(obj[k], optional[k]):
            fail(f"{where}.{k}: {type(obj[k]).__name__}")


def check_schema(doc, who):
    """The JSON schema both writers must follow (docs/bench.md, JSON)."""
    check_keys(doc, TOP, {**TOP_OPTIONAL, **(NCCL_TOP if doc.get("tool") == "smddp-bench" else {})}, who)
    check_keys(doc["options"], OPTIONS, {}, f"{who}.options")
    check_keys(doc["totals"], TOTALS, TOTALS_OPTIONAL, f"{who}.totals")
    for v in doc["totals"].get("verdicts", []):
        check_keys(v, {"code": str, "action": str, "text": str}, {}, f"{who}.totals.verdicts[]")
    if not all(isinstance(v, str) for v in doc["versions"].values()) or "smddp" not in doc["versions"]:
        fail(f"{who}.versions: {doc['versions']}")
    for r in doc["ranks"]:
        check_keys(r, {"rank": int, "host": str, "node": int}, {}, f"{who}.ranks[]")
    check_keys(doc["devices"], {"memory": str}, {"huge_pages": bool}, f"{who}.devices")
    if doc["devices"]["memory"] not in ("host", "cuda"):
        fail(f"{who}.devices.memory {doc['devices']['memory']!r}")
    for i, r in enumerate(doc["rows"]):
        check_keys(r, ROW, ROW_OPTIONAL, f"{who}.rows[{i}]")
        if r["collective"] not in COLLECTIVES or r["dtype"] not in DTYPES or r["placement"] not in (
                "out-of-place", "in-place") or r["op"] not in OPS + ["none"]:
            fail(f"{who}.rows[{i}]: names {r}")
        if (r["op"] == "none") != (r["collective"] not in REDUCING):
            fail(f"{who}.rows[{i}]: op {r['op']} for {r['collective']}")
    if doc["totals"]["rows"] != len(doc["rows"]) or not all(isinstance(v, float)
                                                           for v in doc["totals"]["avg_busbw_gbps"].values()):
        fail(f"{who}.totals: {doc['totals']}")
    if not re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", doc["started_utc"]):
        fail(f"{who}.started_utc {doc['started_utc']!r}")


def table_matches_json(table, doc, who):
    """Every table line is its JSON rows, and the other way round."""
    by_line = {}
    for r in doc["rows"]:
        by_line.setdefault((r["row"], r["backend"]), []).append(r)
    if len(by_line) != len(table["lines"]):
        fail(f"{who}: {len(table['lines'])} table lines, {len(by_line)} (row, backend) in the JSON")
    for line, (key, rows) in zip(table["lines"], sorted(by_line.items())):
        r = rows[0]
        if (line["bytes"], line["count"], line["dtype"], line["backend"]) != (r["bytes"], r["count"], r["dtype"],
                                                                              r["backend"]):
            fail(f"{who}: line {line} against row {r}")
        for side, placement in (("oop", "out-of-place"), ("ip", "in-place")):
            present = [x for x in rows if x["placement"] == placement]
            if (line[side][3] != "N/A") != bool(present):
                fail(f"{who}: {placement} of {line} against {rows}")
            if present and line[side][3] != str(present[0]["wrong"]):
                fail(f"{who}: #wrong {line[side][3]} against {present[0]['wrong']}")


# ---- tests -----------------------------------------------------------------

def gloo_sweep(n):
    """Every collective, dtype and op on n gloo ranks: what gloo supports is
    checked with #wrong 0, the rest is said once in a skipped line."""
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "out.json")
        res = ranks(n, ["all", "allgather_list", "-b", "64", "-e", "1K", "-f", "16", "-d", "all", "-o", "all",
                        "-n", "1", "-w", "0", "-c", "1", "--backend", "gloo", "-r", str(n - 1), "-J", out],
                    timeout=280)
        for r, (rc, so, se) in enumerate(res):
            if rc != 0:
                fail(f"rank {r}: exit {rc}\n{so[-2000:]}\n{se[-2000:]}")
            if r > 0 and so:
                fail(f"rank {r} printed: {so[:200]}")
        table = parse_table(res[0][1], "smddp-bench-torch")
        doc = json.load(open(out))
    check_schema(doc, "torch json")
    table_matches_json(table, doc, "torch")
    if table["nranks"] != n or doc["nranks"] != n or not doc["complete"] or table["wrong"] != 0:
        fail(f"nranks {table['nranks']}/{doc['nranks']}, complete {doc['complete']}, wrong {table['wrong']}")
    bad = [r for r in doc["rows"] if r["wrong"] != 0]
    if bad:
        fail(f"{len(bad)} rows with wrong values: {bad[:3]}")
    # Every (collective, dtype, op) either ran or was skipped with a reason.
    ran = {(r["collective"] if r["algorithm"] != "all_gather(list)" else "allgather_list", r["dtype"],
            r["op"] if r["op"] != "none" else "sum") for r in doc["rows"]}
    skipped = set()
    for s in doc.get("skipped", []):
        words = s["what"].split()
        if s["backend"] == "gloo":
            skipped.add((words[0], words[1], words[2] if len(words) > 2 and words[2] in OPS else "sum"))
    for c in COLLECTIVES + ["allgather_list"]:
        base = "allgather" if c == "allgather_list" else c
        for t in DTYPES:
            for op in (OPS if base in REDUCING else ["sum"]):
                if (c, t, op) not in ran and (c, t, op) not in skipped and c != "barrier":
                    fail(f"{c} {t} {op}: neither measured nor skipped")
    # What gloo has in every torch since 1.13: these must have run, checked.
    must = [("allreduce", t, op) for t in ("int8", "uint8", "int32", "int64", "half", "float", "double")
            for op in OPS]
    must += [(c, t, "sum") for c in ("allgather_list", "broadcast", "alltoall")
             for t in ("int8", "int32", "float", "double")]
    must += [("reduce", t, op) for t in ("int32", "double") for op in OPS]
    missing = [m for m in must if m not in ran]
    if missing:
        fail(f"gloo rows missing: {missing[:5]}")
    if not any(r["collective"] == "barrier" for r in doc["rows"]):
        fail("no barrier row")
    roots = {r["root"] for r in doc["rows"] if r["collective"] in ("broadcast", "reduce")}
    if roots != {n - 1}:
        fail(f"roots {roots}, expected {n - 1}")
    print(f"seed {SEED}: {n} ranks, {len(doc['rows'])} rows checked with #wrong 0, "
          f"{len(doc.get('skipped', []))} combinations gloo lacks skipped")


def test_gloo_np1():
    gloo_sweep(1)


def test_gloo_np2():
    gloo_sweep(2)


def test_gloo_np3():
    gloo_sweep(3)


def test_gloo_np4():
    gloo_sweep(4)


def test_faults():
    """#wrong is counted on every rank and summed: flipped outputs on ranks 1
    and 2 show up as their sum, per checking call; only the root's reduce counts."""
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "out.json")
        res = ranks(3, ["allreduce", "reduce", "-b", "1K", "-e", "1K", "-d", "int32,float32", "-c", "2", "-n", "1",
                        "-w", "0", "--backend", "gloo", "-r", "2", "-J", out],
                    env={"SMDDP_TORCH_TEST_FAULTS": "1:2,2:3"})
        doc = json.load(open(out))
    if any(rc != 1 for rc, _, _ in res):
        fail(f"exits {[rc for rc, _, _ in res]} (want 1 everywhere)\n{res[0][1]}\n{res[0][2]}")
    table = parse_table(res[0][1], "smddp-bench-torch")
    want = {"allreduce": (2 + 3) * 2, "reduce": 3 * 2}
    for r in doc["rows"]:
        if r["wrong"] != want[r["collective"]]:
            fail(f"{r['collective']} {r['dtype']}: #wrong {r['wrong']}, want {want[r['collective']]}")
    total = sum(want[r["collective"]] for r in doc["rows"])
    if table["wrong"] != total or doc["totals"]["wrong"] != total or "FAILED" not in res[0][1]:
        fail(f"totals: table {table['wrong']}, json {doc['totals']['wrong']}, want {total}")
    codes = [(v["code"], v["action"]) for v in doc["totals"]["verdicts"]]
    if codes != [("SMDDP-BENCH-WRONG", "escalate")] or str(total) not in doc["totals"]["verdicts"][0]["text"]:
        fail(f"totals.verdicts: {doc['totals']['verdicts']}")
    # Below --min-busbw: exit 2 and its own code; each row the torch bench
    # gives is a row of the one table (docs/diag.md lists it, checked
    # against results/src/failure_codes.cc by results.FailureCodes).
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "out.json")
        res = ranks(1, ["allreduce", "-b", "1K", "-e", "1K", "-n", "1", "-w", "0", "--backend", "gloo",
                        "--min-busbw", "1000000", "-J", out])
        doc = json.load(open(out))
    verdicts = doc["totals"]["verdicts"]
    if res[0][0] != 2 or [v["code"] for v in verdicts] != ["SMDDP-BENCH-BELOW-THRESHOLD"] or \
            "below --min-busbw 1000000.000 GB/s" not in verdicts[0]["text"]:
        fail(f"--min-busbw: exit {res[0][0]}, verdicts {verdicts}\n{res[0][2]}")
    table_rows = dict(re.findall(r"^\| `(SMDDP-[A-Z-]+)` \| ([a-z-]+) \|", open(os.path.join(ARGS.root, "docs", "diag.md")).read(), re.M))
    sys.path.insert(0, os.path.join(ARGS.root, "bench", "torch"))
    from smddp_bench_torch import codes as torch_codes  # noqa: E402
    for row in torch_codes.ROWS:
        if table_rows.get(row["code"]) != row["action"]:
            fail(f"{row}: docs/diag.md's table says {table_rows.get(row['code'])!r}")
    print(f"seed {SEED}: {len(doc['rows'])} rows, #wrong summed over ranks ({total}), exit 1; "
          f"below --min-busbw exit 2; verdicts carry their codes")


def test_format():
    """One schema reads both tools' rows: smddp-bench under mpirun and
    smddp-bench-torch on gloo, same flags and seed, give the same rows."""
    common = ["allreduce", "broadcast", "reduce", "alltoall", "barrier", "-b", "1K", "-e", "16K", "-f", "4",
              "-d", "int32,float32", "-o", "sum,max", "-c", "1", "-n", "2", "-w", "1", "-r", "1"]
    with tempfile.TemporaryDirectory() as d:
        cpp_json, py_json = os.path.join(d, "cpp.json"), os.path.join(d, "py.json")
        r = run([ARGS.mpirun, "--oversubscribe", "--bind-to", "none", "-np", "2", ARGS.bench, *common, "allgather",
                 "--seed", str(SEED), "-J", cpp_json], timeout=240, env=clean_env(
                     OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1"))
        if r.returncode != 0:
            fail(f"smddp-bench: exit {r.returncode}\n{r.stdout[-2000:]}\n{r.stderr[-2000:]}")
        res = ranks(2, [*common, "allgather_list", "--backend", "gloo", "-J", py_json])
        if any(rc != 0 for rc, _, _ in res):
            fail(f"smddp-bench-torch: exits {[x[0] for x in res]}\n{res[0][1][-2000:]}\n{res[0][2][-2000:]}")
        cpp_doc, py_doc = json.load(open(cpp_json)), json.load(open(py_json))
    cpp = parse_table(r.stdout, "smddp-bench")
    py = parse_table(res[0][1], "smddp-bench-torch")
    for doc, table, who in ((cpp_doc, cpp, "smddp-bench"), (py_doc, py, "smddp-bench-torch")):
        check_schema(doc, who)
        table_matches_json(table, doc, who)
        if doc["tool"] != who or table["tool"] != who or table["wrong"] != 0:
            fail(f"{who}: tool {doc['tool']}/{table['tool']}, wrong {table['wrong']}")
    if cpp["version"] != py["version"] or cpp_doc["versions"]["smddp"] != py_doc["versions"]["smddp"]:
        fail(f"versions differ: {cpp['version']} / {py['version']}")
    # One layout, one parser: the kinds of line agree too (the torch rows are a subset).
    if set(py["kinds"]) - set(cpp["kinds"]) - {"skipped"}:
        fail(f"line kinds only smddp-bench-torch prints: {set(py['kinds']) - set(cpp['kinds'])}")
    key = ("collective", "dtype", "op", "root", "bytes", "count", "placement")
    cpp_rows = {tuple(x[k] for k in key) for x in cpp_doc["rows"]}
    py_rows = {tuple(x[k] for k in key) for x in py_doc["rows"]}
    if not py_rows or not py_rows <= cpp_rows:
        fail(f"rows only smddp-bench-torch has: {sorted(py_rows - cpp_rows)[:5]}")
    # Where torch has no form (allreduce out of place), the row is N/A there; nothing else is missing.
    lacking = {row for row in cpp_rows - py_rows
               if not (row[-1] == "out-of-place" and row[0] in ("allreduce", "broadcast", "reduce"))
               and not (row[-1] == "in-place" and row[0] in ("alltoall", "barrier"))}
    if lacking:
        fail(f"rows smddp-bench-torch lacks: {sorted(lacking)[:5]}")
    for doc in (cpp_doc, py_doc):
        doc["options"].pop("backends")
    if {k: v for k, v in cpp_doc["options"].items()} != py_doc["options"]:
        fail(f"options differ:\n {cpp_doc['options']}\n {py_doc['options']}")
    print(f"seed {SEED}: both tables read (smddp-bench's as nccl-tests'), both JSON documents by one schema; "
          f"{len(py_rows)} torch rows are smddp-bench rows; options identical")


def test_data():
    """smddp-bench-torch's inputs are smddp-bench's, bit for bit, and its
    expected outputs are what smddp-bench's own checker accepts."""
    sys.path.insert(0, os.path.join(ARGS.root, "bench/torch"))
    import numpy as np
    from smddp_bench_torch import data
    from smddp_bench_torch.types import buffer_counts
    rnd = random.Random(SEED)
    lines, cases = [], []
    for c in COLLECTIVES[:-1]:
        for t in DTYPES:
            for op in (OPS if c in REDUCING else ["sum"]):
                for n in (1, 2, 3, 4):
                    root, rank, count = rnd.randrange(n), rnd.randrange(n), rnd.randint(1, 70)
                    s = data.Spec(c, t, op, rnd.randrange(1 << 64), n, root)
                    _, recv = buffer_counts(c, count, n)
                    args = f"{c} {t} {op} {s.seed} {n} {root} {rank} {count}"
                    lines.append("fill " + args)
                    cases.append(("fill", s, rank, count, None))
                    want = data.expected(s, rank, count)
                    got = np.zeros(recv, dtype=data.bits_type(t)) if want is None else want.copy()
                    flips = rnd.sample(range(len(got)), rnd.randint(0, min(3, len(got)))) if want is not None else []
                    for i in flips:
                        got[i] ^= got.dtype.type(1)
                    if data.count_wrong(s, rank, got, count) != len(flips):
                        fail(f"python checker: {args}: {data.count_wrong(s, rank, got, count)} wrong, "
                             f"{len(flips)} flipped")
                    lines.append("check " + args + " " + got.view(np.uint8).tobytes().hex())
                    cases.append(("check", s, rank, count, len(flips)))
    r = run([ARGS.data_reference], input="\n".join(lines) + "\n", timeout=120)
    answers = r.stdout.splitlines()
    if r.returncode != 0 or len(answers) != len(cases):
        fail(f"data_reference: exit {r.returncode}, {len(answers)} answers for {len(cases)}: {r.stderr[-500:]}")
    for (kind, s, rank, count, flips), answer in zip(cases, answers):
        if kind == "fill":
            mine = data.fill(s, rank, buffer_counts(s.collective, count, s.nranks)[0])
            if mine.view(np.uint8).tobytes().hex() != answer:
                fail(f"inputs differ for {s} rank {rank} count {count}:\n py  {mine.tobytes().hex()[:64]}\n"
                     f" cpp {answer[:64]}")
        elif int(answer) != flips:
            fail(f"smddp-bench's checker counts {answer} wrong in our expected output of {s} rank {rank} "
                 f"(flipped {flips})")
    print(f"seed {SEED}: {len(cases) // 2} cases (every collective, dtype, op, 1-4 ranks): inputs identical, "
          f"our expected outputs pass smddp-bench's checker, flips counted by both")


def one_line_64(r, needle, who):
    lines = r.stderr.strip().splitlines()
    if r.returncode != 64 or len(lines) != 1 or needle not in lines[0] or r.stdout:
        fail(f"{who}: exit {r.returncode}, stdout {r.stdout[:200]!r}, stderr {r.stderr!r}; expected 64 and {needle!r}")


def test_unavailable():
    """A backend that cannot run here: one line naming what is missing, exit 64, on rank 0 only."""
    import torch
    r = run([sys.executable, tool(), "--backend", "smddp"])
    one_line_64(r, "smddp: smdistributed.dataparallel not importable in this container", "smddp")
    r = run([sys.executable, tool(), "--backend", "gloo,smddp", "-b", "8", "-e", "8"])
    one_line_64(r, "smddp: smdistributed.dataparallel not importable", "gloo,smddp")
    if torch.cuda.is_available():
        print("SKIP: this host has a CUDA device; nccl would run")
        sys.exit(SKIP)
    r = run([sys.executable, tool(), "--backend", "nccl"])
    one_line_64(r, "nccl: ", "nccl")
    r = run([sys.executable, tool(), "--backend", "gloo", "--mem", "cuda"])
    one_line_64(r, "--mem cuda: no CUDA device", "--mem cuda")
    r = run([sys.executable, tool(), "--backend", "mpi"])
    one_line_64(r, "mpi: ", "mpi")
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "out.json")
        res = ranks(2, ["--backend", "nccl", "-J", out], timeout=60)
        if [x[0] for x in res] != [64, 64] or len(res[0][2].strip().splitlines()) != 1 or res[1][2] or \
                os.path.exists(out):
            fail(f"2 ranks: {[(x[0], x[2]) for x in res]}, json written {os.path.exists(out)}")
    print("smddp, nccl, mpi and --mem cuda refused with one line and 64 (once for 2 ranks, nothing written)")


def test_bad_usage():
    """Bad flags: one line on stderr, exit 64, before torch is contacted."""
    cases = [
        (["bogus"], "unknown collective 'bogus'"),
        (["-b", "1x"], "-b/--minbytes '1x': unknown unit 'x'; expected a byte count"),
        (["-b", "0x10"], "-b/--minbytes '0x10': hexadecimal; expected a byte count"),
        (["-b", "2M", "-e", "1M"], "is above -e/--maxbytes"),
        (["-b", "1K", "-e", "1M", "-f", "1"], "-f/--stepfactor must be above 1"),
        (["-n", "0"], "-n/--iters must be at least 1"),
        (["-n", "x"], "expected a whole number"),
        (["-d", "float128"], "unknown datatype 'float128'"),
        (["-o", "xor"], "unknown op 'xor'"),
        (["--backend", "tcp"], "unknown backend 'tcp'; valid: smddp, nccl, gloo, mpi"),
        (["--backend", "gloo,gloo"], "names a backend twice"),
        (["--backend", ","], "--backend is empty"),
        (["-J", "/nonexistent/dir/x.json"], "directory /nonexistent/dir does not exist"),
        (["--csv", "x.csv"], "unrecognized arguments"),
        (["-a", "7"], "-a/--average must be 0, 1, 2 or 3"),
        (["--in-place", "--out-of-place"], "exclude each other"),
    ]
    for argv, needle in cases:
        one_line_64(run([sys.executable, tool(), "--backend", "gloo", *argv] if "--backend" not in argv
                        else [sys.executable, tool(), *argv]), needle, " ".join(argv))
    one_line_64(run([sys.executable, tool(), "--backend", "gloo"], env=clean_env(RANK="0")),
                "RANK set but not WORLD_SIZE, MASTER_ADDR, MASTER_PORT", "half torchrun env")
    one_line_64(run([sys.executable, tool(), "--backend", "gloo"],
                    env=clean_env(RANK="3", WORLD_SIZE="2", MASTER_ADDR="127.0.0.1", MASTER_PORT="1")),
                "RANK=3 is not below WORLD_SIZE=2", "rank above world")
    res = ranks(2, ["--backend", "gloo", "broadcast", "-b", "8", "-e", "8", "-r", "5"], timeout=90)
    if [x[0] for x in res] != [64, 64] or "-r/--root 5 is not a rank of this job (0..1)" not in res[0][2] or \
            len(res[0][2].strip().splitlines()) != 1 or res[1][2] or res[0][1]:
        fail(f"root outside the job: {[(x[0], x[1][:100], x[2]) for x in res]}")
    print(f"{len(cases) + 3} bad usages: one line, exit 64")
    # The one size grammar (docs/bench.md#sizes): the table the C++ readers
    # are tested on (tests/unit/diag/size_grammar_test.cc), same bytes or refused.
    sys.path.insert(0, os.path.join(ARGS.root, "bench/torch"))
    from smddp_bench_torch.options import size_or_reason
    with open(os.path.join(ARGS.root, "tests/unit/size_cases.json"), encoding="utf-8") as f:
        table = json.load(f)
    differ = [(text, want, size_or_reason(text)) for text, want in table if size_or_reason(text)[0] != want]
    if differ or len(table) < 40:
        fail(f"sizes read unlike smddp-bench: {differ}")
    print(f"{len(table)} sizes read as smddp-bench reads them")


def find_report():
    for rel in ("report/smddp-report", "report/smddp_report.py", "report/bin/smddp-report",
                "report/smddp_report/__main__.py"):
        path = os.path.join(ARGS.root, rel)
        if os.path.isfile(path):
            return path
    return None


def test_report():
    """smddp-report (report/) reads smddp-bench-torch's JSON as it reads smddp-bench's."""
    report = find_report()
    if not report:
        print(f"SKIP: no smddp-report under {ARGS.root}/report yet")
        sys.exit(SKIP)
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "torch.json")
        res = ranks(2, ["allreduce", "alltoall", "-b", "1K", "-e", "4K", "-f", "4", "-n", "2", "-w", "1",
                        "--backend", "gloo", "-J", out])
        if any(x[0] != 0 for x in res):
            fail(f"smddp-bench-torch: {[(x[0], x[2][-300:]) for x in res]}")
        cmd = [report] if os.access(report, os.X_OK) else [sys.executable, report]
        html = os.path.join(d, "report.html")
        r = run([*cmd, out, "-o", html], timeout=120)
        if r.returncode != 0:
            fail(f"smddp-report on the torch JSON: exit {r.returncode}\n{r.stdout[-1000:]}\n{r.stderr[-1000:]}")
        # compare reads it too: a file against itself has no regression.
        c = run([*cmd, "compare", out, out, "--markdown"], timeout=120)
        if c.returncode != 0 or "allreduce" not in c.stdout:
            fail(f"smddp-report compare on the torch JSON: exit {c.returncode}\n{c.stdout[-800:]}\n{c.stderr[-800:]}")
        produced = r.stdout + "".join(open(os.path.join(d, f), errors="replace").read()
                                      for f in os.listdir(d) if f.endswith((".html", ".md", ".txt")))
        if "gloo" not in produced or "allreduce" not in produced:
            fail(f"smddp-report output names neither the backend nor the collective: {produced[:500]!r}")
    print(f"smddp-report ({os.path.relpath(report, ARGS.root)}) and its compare read the torch JSON")


def launch(*args):
    return run([sys.executable, os.path.join(ARGS.root, "scripts/sagemaker/launch.py"), *args], timeout=60)


def test_launcher():
    """launch.py --dry-run: the exact estimator arguments of both kinds, without the SDK or AWS."""
    role = "arn:aws:iam::123456789012:role/SageMakerRole"
    r = launch("framework", "--dry-run", "--role", role, "--instance-type", "ml.p5.48xlarge", "--instance-count", "4",
               "--torch-args", "allreduce allgather -b 1M -e 1G --backend smddp,nccl", "--env", "NCCL_DEBUG=WARN",
               "--max-run", "7200")
    if r.returncode != 0:
        fail(f"framework: exit {r.returncode} {r.stderr}")
    got = json.loads(r.stdout)
    want = {"estimator": "sagemaker.pytorch.PyTorch", "fit": {"wait": False}, "arguments": {
        "entry_point": "sagemaker_entry.py", "source_dir": os.path.join(ARGS.root, "bench/torch"),
        "role": role, "instance_type": "ml.p5.48xlarge", "instance_count": 4, "framework_version": "2.3.0",
        "py_version": "py311", "distribution": {"smdistributed": {"dataparallel": {"enabled": True}}},
        "hyperparameters": {"torch-args": "allreduce allgather -b 1M -e 1G --backend smddp,nccl",
                            "bench-args": "allreduce allgather -b 8 -e 1G -f 2 -c 1 --mem cuda --backend smddp,nccl",
                            "preflight": "true"},
        "environment": {"NCCL_DEBUG": "WARN"}, "max_run": 7200, "base_job_name": "smddp-bench"}}
    if got != want:
        fail(f"framework estimator:\n got  {got}\n want {want}")
    if not os.path.isfile(os.path.join(want["arguments"]["source_dir"], "sagemaker_entry.py")):
        fail("source_dir has no sagemaker_entry.py")
    uri = "123456789012.dkr.ecr.us-west-2.amazonaws.com/smddp-bench-pytorch:latest"
    r = launch("generic", "--dry-run", "--role", role, "--image-uri", uri, "--instance-count", "2",
               "--bench-args", "allreduce -b 8 -e 256M --mem cuda", "--no-preflight", "--preflight-profile",
               "p4d.24xlarge")
    if r.returncode != 0:
        fail(f"generic: exit {r.returncode} {r.stderr}")
    got = json.loads(r.stdout)
    want = {"estimator": "sagemaker.estimator.Estimator", "fit": {"wait": False}, "arguments": {
        "image_uri": uri, "role": role, "instance_type": "ml.p4d.24xlarge", "instance_count": 2,
        "hyperparameters": {"torch-args": "allreduce allgather -b 8 -e 1G -f 2 -c 1 --backend smddp,nccl",
                            "bench-args": "allreduce -b 8 -e 256M --mem cuda", "preflight": "false",
                            "preflight-profile": "p4d.24xlarge"},
        "environment": {}, "max_run": 3600, "base_job_name": "smddp-bench"}}
    if got != want:
        fail(f"generic estimator:\n got  {got}\n want {want}")
    bad = [
        (["framework", "--dry-run", "--instance-type", "p4d"], "--instance-type 'p4d'"),
        (["framework", "--dry-run", "--instance-type", "ml.g5.2xlarge"], "SMDDP runs on ml.p4d.24xlarge"),
        (["framework", "--dry-run", "--instance-count", "two"], "--instance-count 'two'"),
        (["framework", "--dry-run", "--torch-args", "allreduce -b 1x"], "--torch-args: -b/--minbytes '1x'"),
        (["framework", "--dry-run", "--torch-args", "allreduce -J x.json"], "-J is set by the entry"),
        (["framework", "--dry-run", "--bench-args", "allreduce 'open"], "--bench-args"),
        (["framework", "--dry-run", "--env", "NOEQUALS"], "--env 'NOEQUALS'"),
        (["framework", "--dry-run", "--role", "admin"], "--role 'admin'"),
        (["framework", "--instance-count", "2"], "--role is required"),
        (["generic", "--dry-run"], "--image-uri"),
        (["generic", "--dry-run", "--image-uri", "not a uri"], "--image-uri 'not a uri'"),
        (["sideways"], "invalid choice"),
    ]
    for argv, needle in bad:
        r = launch(*argv)
        lines = r.stderr.strip().splitlines()
        if r.returncode != 64 or len(lines) != 1 or needle not in lines[0] or r.stdout:
            fail(f"{argv}: exit {r.returncode}, {r.stdout!r} {r.stderr!r}; expected 64 and {needle!r}")
    print(f"framework and generic estimator arguments exact; {len(bad)} malformed arguments refused with 64")


def fake_image(d):
    """The parts of SageMaker's PyTorch image the build script looks for."""
    parts = {"openmpi/bin/mpicc": "#!/bin/sh\n", "efa/lib/pkgconfig/libfabric.pc": "",
             "cuda/bin/nvcc": "#!/bin/sh\n", "cuda/include/nccl.h": ""}
    for rel, text in parts.items():
        path = os.path.join(d, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(text)
        os.chmod(path, 0o755)
    return clean_env(SMDDP_MPI_HOME=f"{d}/openmpi", SMDDP_EFA_HOME=f"{d}/efa", CUDA_HOME=f"{d}/cuda",
                     NCCL_HOME=f"{d}/cuda", SMDDP_PYTHON=sys.executable)


def test_image_build():
    """The extended image's build script, as far as it runs without the base
    image: what is missing (69), the exact build command for an image's
    layout, and the install and smoke steps for real; shellcheck clean."""
    script = os.path.join(ARGS.root, "scripts/sagemaker/build-pytorch-image.sh")
    r = run([script, "--check"], env=clean_env(SMDDP_MPI_HOME="/nonexistent/openmpi", SMDDP_EFA_HOME="/nonexistent/efa",
                                                CUDA_HOME="/nonexistent/cuda", SMDDP_PYTHON=sys.executable))
    lines = r.stderr.strip().splitlines()
    if r.returncode != 69 or len(lines) != 1 or "missing Open MPI (/nonexistent/openmpi/bin/mpicc)" not in lines[0] \
            or "libfabric (/nonexistent/efa/lib/pkgconfig/libfabric.pc)" not in lines[0] or "CUDA (" not in lines[0]:
        fail(f"--check without the image: exit {r.returncode} {r.stderr!r}")
    with tempfile.TemporaryDirectory() as d:
        env = fake_image(d)
        r = run([script, "--check"], env=env)
        if r.returncode != 0 or f"Open MPI: {d}/openmpi" not in r.stdout or f"NCCL: {d}/cuda" not in r.stdout:
            fail(f"--check on the image layout: exit {r.returncode} {r.stdout!r} {r.stderr!r}")
        r = run([script, "--dry-run", "--toolchain", "/opt/smddp/toolchain", "--prefix", "/usr/local",
                 "--build-dir", "/opt/smddp/build"], env=env)
        build = r.stdout.split("# build\n", 1)[-1].splitlines()[0] if "# build\n" in r.stdout else ""
        words = shlex.split(build)
        tc = "/opt/smddp/toolchain"
        want_tail = [os.path.join(ARGS.root, "scripts/build.sh"), "--build-dir", "/opt/smddp/build", "--cuda", "ON",
                     "--no-tests", "--install", "/usr/local", "--", f"-DMPI_HOME={d}/openmpi",
                     f"-DMPIEXEC_EXECUTABLE={d}/openmpi/bin/mpirun", "-DCMAKE_CUDA_ARCHITECTURES=80;90",
                     f"-DCMAKE_CUDA_COMPILER={d}/cuda/bin/nvcc", f"-DCMAKE_PREFIX_PATH={tc}",
                     f"-DCMAKE_C_COMPILER={tc}/bin/x86_64-conda-linux-gnu-gcc",
                     f"-DCMAKE_CXX_COMPILER={tc}/bin/x86_64-conda-linux-gnu-g++",
                     f"-DCMAKE_CUDA_HOST_COMPILER={tc}/bin/x86_64-conda-linux-gnu-g++",
                     f"-DCMAKE_BUILD_RPATH={tc}/lib;{d}/openmpi/lib;{d}/efa/lib"]
        if r.returncode != 0 or words[:1] != ["env"] or words[-len(want_tail):] != want_tail or \
                f"PKG_CONFIG_PATH={d}/efa/lib/pkgconfig:{tc}/lib/pkgconfig:{tc}/share/pkgconfig" not in words or \
                f"NCCL_HOME={d}/cuda" not in words:
            fail(f"--dry-run: exit {r.returncode}\n got  {words}\n want ... {want_tail}\n{r.stderr}")
        prefix, code = os.path.join(d, "prefix"), os.path.join(d, "code")
        r = run([script, "--skip-build", "--prefix", prefix, "--code-dir", code], env=env, timeout=180)
        if r.returncode != 0 or "smddp-bench-torch 0.1.0" not in r.stdout:
            fail(f"--skip-build: exit {r.returncode}\n{r.stdout}\n{r.stderr}")
        for rel in ("prefix/bin/smddp-bench-torch", "prefix/lib/smddp/python/smddp_bench_torch/sweep.py",
                    "code/sagemaker_entry.py", "code/smddp_bench_torch/data.py"):
            if not os.path.isfile(os.path.join(d, rel)):
                fail(f"{rel} not installed")
        # The installed copy runs from anywhere, with no source tree on its path.
        r = run([sys.executable, os.path.join(prefix, "bin/smddp-bench-torch"), "broadcast", "-b", "64", "-e", "64",
                 "-n", "1", "-w", "0", "--backend", "gloo"], cwd=d, timeout=120)
        if r.returncode != 0 or parse_table(r.stdout, "installed")["wrong"] != 0:
            fail(f"installed smddp-bench-torch: exit {r.returncode}\n{r.stdout}\n{r.stderr}")
    r = run([script, "--prefix"])
    one_line_64(r, "--prefix needs a directory", "--prefix")
    # scripts/ as a whole: e2e_deploy_shellcheck; bench/torch/install.sh is outside it.
    mine = [script, os.path.join(ARGS.root, "bench/torch/install.sh")]
    r = run(["shellcheck", "-x", *mine], cwd=ARGS.root)
    if r.returncode != 0:
        fail(f"shellcheck:\n{r.stdout}{r.stderr}")
    print("build script: 69 naming what is missing; exact build command on the image's layout; "
          "install and smoke run here; shellcheck clean")


def test_sagemaker_entry():
    """The entry's torch stage (SMDDP_SM_TORCH_ARGS): after preflight, before the
    engine rows, with MASTER_ADDR and SMDDP's launcher settings; and
    sagemaker_entry.py hands the hyperparameters over to it."""
    with tempfile.TemporaryDirectory() as d:
        bins = os.path.join(d, "bin")
        os.makedirs(bins)
        for name, body in (("nvidia-smi", "exit 9"), ("smddprun", "exec \"$@\"")):
            with open(os.path.join(bins, name), "w") as f:
                f.write(f"#!/bin/sh\n{body}\n")
            os.chmod(os.path.join(bins, name), 0o755)
        for hosts in (["algo-1"], ["algo-1", "algo-2"]):
            ml = os.path.join(d, f"ml{len(hosts)}")
            os.makedirs(f"{ml}/input/config")
            with open(f"{ml}/input/config/resourceconfig.json", "w") as f:
                json.dump({"current_host": "algo-1", "hosts": hosts, "network_interface_name": "lo",
                           "current_instance_type": "ml.p4d.24xlarge"}, f)
            env = clean_env(PATH=f"{bins}:{os.environ['PATH']}", SMDDP_SM_WORK_DIR=f"{d}/w", SMDDP_BIN_DIR="/b",
                            SM_NUM_GPUS="8", SMDDP_SM_TORCH_ARGS="allreduce -b 8 -e 1G --backend smddp,nccl")
            env_entry = dict(env, SMDDP_SM_ENTRY=os.path.join(ARGS.root, "scripts/sagemaker-entry.sh"))
            del env_entry["SMDDP_SM_TORCH_ARGS"]
            direct = run([os.path.join(ARGS.root, "scripts/sagemaker-entry.sh"), "train", "--dry-run", "--ml-root",
                          ml], env=env)
            if direct.returncode != 0:
                fail(f"sagemaker-entry.sh: exit {direct.returncode} {direct.stderr}")
            sections, title = {}, None
            for line in direct.stdout.splitlines():
                if line.startswith("# "):
                    title = line[2:]
                    sections[title] = []
                elif title:
                    sections[title].append(line)
            order = [t for t in sections if not t.startswith("hostfile")]
            want_order = ["preflight", "torch benchmark", "benchmark"] + (["release the other hosts"]
                                                                         if len(hosts) > 1 else [])
            if order != want_order:
                fail(f"{len(hosts)} hosts: sections {order}, want {want_order}")
            words = shlex.split(sections["torch benchmark"][0])
            smddp = ["-x", "SMDATAPARALLEL_USE_SINGLENODE=1"] if len(hosts) == 1 else [
                "-x", "SMDATAPARALLEL_USE_HOMOGENEOUS=1", "-x", "SMDATAPARALLEL_SERVER_ADDR=algo-1",
                "-x", "SMDATAPARALLEL_SERVER_PORT=7592", "-x", "SAGEMAKER_INSTANCE_TYPE=ml.p4d.24xlarge"]
            tail = ["-x", "MASTER_ADDR=algo-1", "-x", "MASTER_PORT=29500", *smddp, "smddprun",
                    "/b/smddp-bench-torch", "allreduce", "-b", "8", "-e", "1G", "--backend", "smddp,nccl",
                    "-J", f"{ml}/output/data/torch-results.json"]
            bench = shlex.split(sections["benchmark"][0])
            launcher = bench[:bench.index("/b/smddp-bench")]
            if words != launcher + tail:
                fail(f"{len(hosts)} hosts torch stage:\n got  {words}\n want {launcher + tail}")
            # sagemaker_entry.py as SageMaker's toolkit starts it (hyperparameters as arguments, one it
            # does not know): it hands over to the entry with the settings in its environment.
            r2 = run([sys.executable, "-c", (
                "import os,sys,runpy; os.execve = lambda p,a,e: (print(p, a, e['SMDDP_SM_TORCH_ARGS'], "
                "e['SMDDP_BENCH_ARGS'], e.get('SMDDP_PREFLIGHT')), sys.exit(0)); "
                f"sys.argv=['sagemaker_entry.py','--torch-args','allreduce -b 8','--bench-args','allgather -b 8',"
                f"'--preflight','false','--extra','x']; runpy.run_path({os.path.join(ARGS.root, 'bench/torch/sagemaker_entry.py')!r}, "
                "run_name='__main__')")], env=env_entry)
            want = f"{env_entry['SMDDP_SM_ENTRY']} ['{env_entry['SMDDP_SM_ENTRY']}', 'train'] allreduce -b 8 " \
                   f"allgather -b 8 0"
            if r2.stdout.strip() != want:
                fail(f"sagemaker_entry.py hand-over: {r2.stdout!r} {r2.stderr[-500:]!r}, want {want!r}")
        # Without SMDDP_SM_TORCH_ARGS nothing changes (tests/e2e/deploy checks the rest).
        env.pop("SMDDP_SM_TORCH_ARGS")
        r = run([os.path.join(ARGS.root, "scripts/sagemaker-entry.sh"), "train", "--dry-run", "--ml-root",
                 os.path.join(d, "ml1")], env=env)
        if r.returncode != 0 or "# torch benchmark" in r.stdout:
            fail(f"without SMDDP_SM_TORCH_ARGS: {r.returncode} {r.stdout}")
    print("torch stage between preflight and engine rows, exact on 1 and 2 hosts; sagemaker_entry.py hands over")


def main():
    global ARGS
    p = argparse.ArgumentParser()
    p.add_argument("--root", required=True)
    p.add_argument("--bench")
    p.add_argument("--mpirun")
    p.add_argument("--data-reference")
    p.add_argument("test")
    ARGS = p.parse_args()
    sys.dont_write_bytecode = True  # test_data imports the package from the source tree
    fn = globals().get("test_" + ARGS.test)
    if not fn:
        fail(f"unknown test {ARGS.test}")
    try:
        import torch  # noqa: F401
    except ImportError as e:
        fail(f"{sys.executable} cannot import torch ({e}): scripts/install-deps.sh installs python3-torch")
    print(f"seed {SEED} (SMDDP_TEST_SEED={SEED} replays it)")
    fn()


if __name__ == "__main__":
    main()
