#!/usr/bin/env python3
"""smddp-report on the outputs users already have (issue 39): nccl-tests'
-J JSON and text logs of several versions, nccl-tests' analyzer views, and
NCCL Inspector's JSON lines and Prometheus text.

Usage: nccl_formats_e2e.py --report PATH [--bench PATH --mpirun PATH] [--chromium PATH] TEST

The inputs are the fixtures beside this file (our own numbers in the
documented formats; fixtures/make_nccl_tests_fixtures.py wrote the nccl-tests
ones). The analyzer comparison runs nccl-tests' own tools/analyze_perf_json.py
where it can be found (NCCL_TESTS_ANALYZER, else `git show
HEAD:tools/analyze_perf_json.py` of the mirror /work/.mirror/NVIDIA+nccl-tests/
repo, extracted into a temporary folder; it is never part of this repository)
and always against the numbers it printed for the fixture, recorded below.
Every subprocess has a time limit (a hang guard, not an assertion).
"""
import json
import os
import re
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from harness import Tests, check, fail, parse_and_pick, run  # noqa: E402  (tests/e2e/harness.py)

HERE = os.path.dirname(os.path.abspath(__file__))
FIX = os.path.join(HERE, "fixtures")
NT_JSON = os.path.join(FIX, "nccl-tests-2.19.json")
LOGS = {  # log -> (collective, dtype, op, ranks, hosts, sizes): what each version's table holds
    "nccl-tests-2.19-I1.log": ("allreduce", "float", "sum", 4, ["node-a", "node-b"], 5),
    "nccl-tests-2.19-T.log": ("reducescatter", "float", "sum", 4, ["gpu-host-01", "gpu-host-02"], 7),
    "nccl-tests-2.16-all_gather.log": ("allgather", "float", "none", 6, ["trn-a", "trn-b", "trn-c"], 12),
    "nccl-tests-2.10-all_reduce.log": ("allreduce", "float", "sum", 4, ["dgx1", "dgx2"], 17),
}
INSPECTOR_JSONL = os.path.join(FIX, "inspector", "inspector.jsonl")
INSPECTOR_PROM = os.path.join(FIX, "inspector", "inspector.prom")
MIRROR = "/work/.mirror/NVIDIA+nccl-tests/repo"
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync",
                  "--enable-logging=stderr", "--v=0"]
ARGS = None
TESTS = Tests()
test = TESTS  # the decorator










def report(*args, expect=0):
    r = run([sys.executable, ARGS.report, *args])
    check(r.returncode == expect, f"smddp-report {' '.join(os.path.basename(a) for a in args)} exits {expect}",
          f"exit {r.returncode}\n{r.stdout}\n{r.stderr}")
    return r


def compare_lines(out):
    """{row name: (time kind, base, new, ratio, test, verdict)} of compare's text table."""
    rows = {}
    for line in out.splitlines():
        m = re.match(r"^(\S.*? np\d+)\s+(p50|time)\s+(\S+)\s+(\S+)\s+(\S+)\s+(\S+)\s+\S+\s+(\S+)$", line)
        if m:
            rows[m.group(1)] = m.group(2, 3, 4, 5, 6, 7)
    return rows


# ---- inputs -------------------------------------------------------------------------

@test
def nccl_tests_inputs(tmp):
    """Every fixture is read by its content (whatever its name): the rows
    each version's table holds, named as smddp-bench names them; the log and
    the JSON of one run give the same rows; a log from before 2.17, which does
    not name its program, is named by its file."""
    for name, (coll, dtype, op, ranks, hosts, sizes) in LOGS.items():
        path = os.path.join(FIX, name)
        r = report("compare", path, path)
        rows = compare_lines(r.stdout)
        want = {f"{coll} {dtype}" + (f" {op}" if op != "none" else "") + f" {s} B nccl {p} np{ranks}"
                for s in [int(line.split()[0]) for line in open(path) if re.match(r"\s*\d+\s+\d+\s", line)]
                for p in ("out-of-place", "in-place")}
        check(set(rows) == want and len(rows) == 2 * sizes, f"{name}: {2 * sizes} rows ({coll} {dtype} {op}, np{ranks}, "
              f"both placements)", r.stdout)
        check(all(v[4] == "threshold" and v[3] == "1.000" for v in rows.values()),
              f"{name}: a log has no per-iteration samples: the threshold alone", r.stdout)
        r = report("analyze", path, "--nodes")
        for h in hosts:
            check(re.search(rf"^  {re.escape(h)}: ranks ", r.stdout, re.M), f"{name}: --nodes names host {h}", r.stdout)
        check(f"nodes: {len(hosts)}, from the log's Rank lines" in r.stdout, f"{name}: {len(hosts)} nodes", r.stdout)
    renamed = os.path.join(tmp, "results.txt")  # the format comes from the content, not the name
    shutil.copy(os.path.join(FIX, "nccl-tests-2.19-T.log"), renamed)
    r = report("compare", renamed, renamed)
    check(len(compare_lines(r.stdout)) == 14, "a log named .txt is still read as a log", r.stdout)
    unnamed = os.path.join(tmp, "run.log")  # no program line, no collective in the name
    shutil.copy(os.path.join(FIX, "nccl-tests-2.16-all_gather.log"), unnamed)
    r = report("compare", unnamed, unnamed)
    check(all(k.startswith("unknown float") for k in compare_lines(r.stdout)), "an unnamed old log: 'unknown'",
          r.stdout)

    r = report("compare", NT_JSON, NT_JSON)
    rows = compare_lines(r.stdout)
    check(len(rows) == 10 and all(v[4] == "mann-whitney" for v in rows.values()),
          "nccl-tests JSON with -I 1: 10 rows, each tested on its iterations (times_us after -K)", r.stdout)
    log = os.path.join(FIX, "nccl-tests-2.19-I1.log")
    r = report("compare", NT_JSON, log)
    rows = compare_lines(r.stdout)
    check(len(rows) == 10 and all(v[3] == "1.000" and v[5] == "same" for v in rows.values()),
          "the JSON and the log of one run: the same 10 rows, the same times", r.stdout)


@test
def nccl_tests_compare(tmp):
    """compare on nccl-tests JSON and on logs as on ours: identical 0, every
    time doubled 2 with every row named."""
    doc = json.load(open(NT_JSON))
    for r in doc["results"]:
        for k in ("out_of_place", "in_place"):
            r[k]["time"] *= 2
            pi = r[k + "_per_iter"]
            pi["times_us"] = [t * 2 for t in pi["times_us"]]
            pi["per_process_max_times_us"] = [[t * 2 for t in p] for p in pi["per_process_max_times_us"]]
            for s in ("min_us", "max_us", "avg_us", "p50_us", "p95_us", "p99_us"):
                pi[s] *= 2
    slow = os.path.join(tmp, "slow.json")
    json.dump(doc, open(slow, "w"))
    r = report("compare", NT_JSON, slow, expect=2)
    rows = compare_lines(r.stdout)
    check(len(rows) == 10 and all(v[3] == "2.000" and v[4] == "mann-whitney" for v in rows.values()),
          "nccl-tests JSON, times doubled: ratio 2.000 on every row, the U test", r.stdout)
    check(r.stdout.strip().splitlines()[-1].startswith("REGRESSION in 10 of 10 matched rows"),
          "every row regressed (9 iterations each, all slower: exact p < 0.001)", r.stdout)
    log = os.path.join(FIX, "nccl-tests-2.10-all_reduce.log")
    lines = []
    for line in open(log):
        if re.match(r"\s*\d+\s+\d+\s", line):
            f = line.split()
            f[4], f[8] = f"{float(f[4]) * 1.5:.2f}", f"{float(f[8]) * 1.5:.2f}"
            line = "  ".join(f) + "\n"
        lines.append(line)
    slow_log = os.path.join(tmp, "slow-all_reduce.log")
    open(slow_log, "w").write("".join(lines))
    r = report("compare", log, slow_log, expect=2)
    rows = compare_lines(r.stdout)
    check(len(rows) == 34 and all(v[3] == "1.500" and v[5] == "regressed" for v in rows.values()),
          "a 2.10 log, times x1.5: 34 rows regressed at 1.500", r.stdout)
    r = report("compare", log, slow_log, "--markdown", expect=2)
    check(sum(line.startswith("| allreduce | float | sum |") for line in r.stdout.splitlines()) == 34,
          "--markdown: one table row per row", r.stdout)
    report("compare", log, slow_log, "--threshold", "60", expect=0)


# ---- the analyzer ---------------------------------------------------------------------

# What tools/analyze_perf_json.py (nccl-tests 2.19.6) printed for
# fixtures/nccl-tests-2.19.json, --all and --all --in-place, as parsed by
# parse_analyzer(): the numbers as it rounds them.
EXPECTED = {'in-place': {'consistency': 'PASS',
              'iter0': [['8', '52.3', '20.8', '2.5', '41.6', '0.5'], ['1024', '52.1', '20.7', '2.5', '41.7', '1.3'],
                        ['131072', '60.4', '27.3', '2.2', '46.4', '37.4'],
                        ['1048576', '76.5', '35.7', '2.1', '44.6', '36.2'],
                        ['8388608', '222.7', '104.1', '2.1', '50.7', '46.1']],
              'nodes': [['0', 'node-a', '0', '1', '23.5', '23.3', '23.7', '52.3', '0', '42.4'],
                        ['1', 'node-b', '2', '3', '23.5', '23.4', '23.7', '52.2', '2', '42.4'],
                        ['0', 'node-a', '0', '1', '23.4', '23.3', '23.5', '51.1', '1', '41.9'],
                        ['1', 'node-b', '2', '3', '23.4', '23.2', '23.6', '52.1', '2', '42.4'],
                        ['0', 'node-a', '0', '1', '27.6', '27.4', '27.8', '54.6', '0', '49.1'],
                        ['1', 'node-b', '2', '3', '26.0', '24.5', '27.5', '60.4', '3', '42.0'],
                        ['0', 'node-a', '0', '1', '89.0', '89.0', '89.1', '198.3', '0', '43.1'],
                        ['1', 'node-b', '2', '3', '102.7', '101.4', '104.0', '231.9', '2', '55.7']],
              'spikes': [[['27.3', '54.6', '35.3'], ['0', '4', '4', '60.4', 'SYSTEM-WIDE'],
                          ['8', '2', '4', '54.6', '', '0, 1']],
                         [['35.7', '70.2', '34.2'], ['0', '4', '4', '76.5', 'SYSTEM-WIDE'],
                          ['6', '4', '4', '70.2', 'SYSTEM-WIDE']],
                         [['104.1', '231.9', '43.5'], ['0', '4', '4', '222.7', 'SYSTEM-WIDE'],
                          ['4', '1', '4', '231.9', 'STRAGGLER: process 2', '2']]],
              'stats': [['8', '20.8', '20.6', '20.9', '20.9', '0.5', '1.0'],
                        ['1024', '20.7', '20.3', '21.0', '21.0', '1.3', '1.0'],
                        ['131072', '27.3', '23.6', '54.6', '54.6', '35.3', '2.0'],
                        ['1048576', '35.7', '30.4', '70.2', '70.2', '34.2', '2.0'],
                        ['8388608', '104.1', '85.8', '231.9', '231.9', '43.5', '2.2']],
              'straggler': [['1', '23.3', '0', '23.7', '0.4', '1.9', '0', '42.4', '0', '52.3'],
                            ['3', '23.2', '2', '23.6', '0.4', '1.5', '2', '42.4', '2', '52.1'],
                            ['2', '24.5', '0', '27.8', '3.3', '13.5', '0', '49.1', '3', '60.4'],
                            ['1', '89.0', '2', '104.0', '15.1', '16.9', '2', '55.7', '2', '231.9']]},
 'out-of-place': {'consistency': 'PASS',
                  'iter0': [['8', '50.6', '20.4', '2.5', '40.9', '0.7'],
                            ['1024', '51.5', '20.3', '2.5', '42.0', '1.2'],
                            ['131072', '60.1', '26.5', '2.3', '46.7', '36.1'],
                            ['1048576', '77.8', '34.5', '2.3', '46.2', '35.5'],
                            ['8388608', '215.0', '101.6', '2.1', '49.3', '44.6']],
                  'nodes': [['0', 'node-a', '0', '1', '22.9', '22.8', '22.9', '49.4', '1', '40.6'],
                            ['1', 'node-b', '2', '3', '23.0', '22.9', '23.1', '50.6', '2', '42.6'],
                            ['0', 'node-a', '0', '1', '22.9', '22.7', '23.1', '51.5', '1', '43.3'],
                            ['1', 'node-b', '2', '3', '22.9', '22.9', '23.0', '49.5', '3', '40.6'],
                            ['0', 'node-a', '0', '1', '27.0', '26.9', '27.1', '53.7', '0', '49.6'],
                            ['1', 'node-b', '2', '3', '25.4', '23.8', '27.0', '60.1', '3', '43.0'],
                            ['0', 'node-a', '0', '1', '87.4', '86.9', '87.8', '194.2', '0', '42.6'],
                            ['1', 'node-b', '2', '3', '100.7', '99.2', '102.3', '222.3', '2', '55.1']],
                  'spikes': [[['26.5', '52.0', '34.1'], ['0', '4', '4', '60.1', 'SYSTEM-WIDE'],
                              ['8', '2', '4', '52.0', '', '0, 1']],
                             [['34.5', '67.1', '33.5'], ['0', '4', '4', '77.8', 'SYSTEM-WIDE'],
                              ['6', '4', '4', '67.1', 'SYSTEM-WIDE']],
                             [['101.6', '222.3', '42.0'], ['0', '4', '4', '215.0', 'SYSTEM-WIDE'],
                              ['4', '1', '4', '222.3', 'STRAGGLER: process 2', '2']]],
                  'stats': [['8', '20.4', '20.1', '20.6', '20.6', '0.6', '1.0'],
                            ['1024', '20.3', '19.9', '20.5', '20.5', '1.2', '1.0'],
                            ['131072', '26.5', '22.8', '52.0', '52.0', '34.1', '2.0'],
                            ['1048576', '34.5', '29.6', '67.1', '67.1', '33.5', '1.9'],
                            ['8388608', '101.6', '84.1', '222.3', '222.3', '42.0', '2.2']],
                  'straggler': [['0', '22.8', '3', '23.1', '0.2', '1.1', '2', '42.6', '2', '50.6'],
                                ['0', '22.7', '1', '23.1', '0.3', '1.4', '1', '43.3', '1', '51.5'],
                                ['2', '23.8', '1', '27.1', '3.4', '14.2', '0', '49.6', '3', '60.1'],
                                ['1', '86.9', '2', '102.3', '15.4', '17.7', '2', '55.1', '2', '222.3']]}}


def parse_analyzer(text):
    """The numbers of the analyzer's text, section by section, as strings."""
    out = {"consistency": None, "stats": [], "straggler": [], "spikes": [], "iter0": [], "nodes": []}
    section = None
    for line in text.splitlines():
        if line.startswith("PER-ITERATION STATS"):
            section = "stats"
        elif line.startswith("PER-PROCESS STRAGGLER"):
            section = "straggler"
        elif line.startswith("SPIKE ANALYSIS"):
            section = "spikes"
        elif line.startswith("ITERATION 0 WARMUP"):
            section = "iter0"
        elif line.startswith("PER-NODE ANALYSIS"):
            section = "nodes"
        m = re.match(r"Consistency \(.*\): (\S+)", line)
        if m:
            out["consistency"] = m.group(1)
        if section == "stats":
            m = re.match(r"^\s*(\d+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)%\s+([\d.]+)x", line)
            if m:
                out[section].append(list(m.groups()))
        elif section == "iter0":
            m = re.match(r"^\s*(\d+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)x\s+([\d.]+)%\s+([\d.]+)%", line)
            if m:
                out[section].append(list(m.groups()))
        elif section == "straggler":
            m = re.match(r"^\s*\S+ \S+:\s+fastest=process\s+(\d+) \(([\d.]+)us\)\s+slowest=process\s+(\d+) "
                         r"\(([\d.]+)us\)\s+spread=([\d.]+)us \(([\d.]+)%\)", line)
            if m:
                out["straggler"].append(list(m.groups()))
            m = re.match(r"^\s+noisiest=process\s+(\d+) \(CV=([\d.]+)%\)\s+worst i_max: process (\d+) \(([\d.]+)us\)",
                         line)
            if m:
                out["straggler"][-1] += list(m.groups())
        elif section == "spikes":
            m = re.match(r"^\S+ \S+ \(avg=([\d.]+), max=([\d.]+), CV=([\d.]+)%\):", line)
            if m:
                out["spikes"].append([list(m.groups())])
            m = re.match(r"^\s+iter\s+(\d+):\s+(\d+)/(\d+) processes spiked\s+max=([\d.]+)(?:\s+\[(SYSTEM-WIDE|"
                         r"STRAGGLER: process \d+)\])?", line)
            if m:
                out["spikes"][-1].append([m.group(1), m.group(2), m.group(3), m.group(4), m.group(5) or ""])
            m = re.match(r"^\s+processes: \[([\d, ]*)\]", line)
            if m:
                out["spikes"][-1][-1].append(m.group(1))
        elif section == "nodes":
            m = re.match(r"^\s+Node (\d+) \((.+?), processes\s+(\d+)(?:-\s*(\d+))?\):\s+avg=([\d.]+)us\s+"
                         r"range=\[([\d.]+)-([\d.]+)\]\s+max=([\d.]+)\s+noisiest=process (\d+) CV=([\d.]+)%", line)
            if m:
                out["nodes"].append([x or "" for x in m.groups()])
    return out


def ours_as_analyzer(out):
    """Our analyze --json, in the analyzer's rounding and shape."""
    f = lambda x: f"{x:.1f}"  # noqa: E731
    res = {"consistency": "PASS" if out["consistency"]["mismatches"] == 0 else "FAIL",
           "stats": [[str(e["size"]), f(e["avg_us"]), f(e["min_us"]), f(e["max_us"]), f(e["p99_us"]), f(e["cv_pct"]),
                      f(e["spike"])] for e in out["stats"]],
           "straggler": [[str(e["fastest"]), f(e["fastest_us"]), str(e["slowest"]), f(e["slowest_us"]),
                          f(e["spread_us"]), f(e["spread_pct"]), str(e["noisiest"]), f(e["noisiest_cv_pct"]),
                          str(e["worst_max"]), f(e["worst_max_us"])] for e in out["straggler"]],
           "spikes": [], "iter0": [[str(e["size"]), f(e["iter0_us"]), f(e["steady_avg_us"]), f(e["ratio"]),
                                    f(e["cv_pct"]), f(e["steady_cv_pct"])] for e in out["iter0"]],
           "nodes": []}
    for e in out["spikes"]:
        entry = [[f(e["avg_us"]), f(e["max_us"]), f(e["cv_pct"])]]
        for it in e["iterations"]:
            kind = {"system-wide": "SYSTEM-WIDE", "straggler": f"STRAGGLER: process {(it['processes'] or [0])[0]}"}
            row = [str(it["iteration"]), str(it["spiked"]), str(out["processes"]), f(it["max_us"]),
                   kind.get(it["kind"], "")]
            if it["processes"]:
                row.append(", ".join(map(str, it["processes"])))
            entry.append(row)
        res["spikes"].append(entry)
    for e in out["nodes"]:
        for n in e["nodes"]:
            p = n["processes"]
            res["nodes"].append([str(n["node"]), n["host"], str(p[0]), str(p[-1]) if len(p) > 1 else "", f(n["avg_us"]),
                                 f(n["min_avg_us"]), f(n["max_avg_us"]), f(n["max_us"]), str(n["noisiest"]),
                                 f(n["noisiest_cv_pct"])])
    return res


def find_analyzer(tmp):
    """nccl-tests' analyzer: $NCCL_TESTS_ANALYZER, else extracted from the mirror; None when neither exists."""
    path = os.environ.get("NCCL_TESTS_ANALYZER")
    if path:
        if not os.path.isfile(path):
            fail(f"NCCL_TESTS_ANALYZER={path}: no such file")
        return path
    if not os.path.isdir(MIRROR):
        return None
    r = run(["git", "-C", MIRROR, "show", "HEAD:tools/analyze_perf_json.py"], timeout=60)
    if r.returncode != 0:
        return None
    path = os.path.join(tmp, "analyze_perf_json.py")
    open(path, "w").write(r.stdout)
    return path


def analyzer_numbers(analyzer, path, in_place):
    r = run([sys.executable, analyzer, path, "--all"] + (["--in-place"] if in_place else []))
    check(r.returncode == 0, f"nccl-tests' analyzer runs on {os.path.basename(path)}", r.stdout + r.stderr)
    return parse_analyzer(r.stdout)


def our_numbers(path, in_place, *extra):
    r = report("analyze", path, "--all", "--json", *(["--in-place"] if in_place else []), *extra)
    return json.loads(r.stdout)


def compare_views(ours, theirs, what):
    for section in ("consistency", "stats", "straggler", "spikes", "iter0", "nodes"):
        check(ours[section] == theirs[section], f"{what}: {section} the same",
              f"ours:   {json.dumps(ours[section])}\ntheirs: {json.dumps(theirs[section])}")
    check(len(ours["stats"]) > 0 and len(ours["straggler"]) > 0 and len(ours["nodes"]) > 0,
          f"{what}: the views are not empty")


@test
def nccl_tests_analyzer(tmp):
    """Our analyze and nccl-tests' analyzer on the same file: the same
    numbers in every view, both placements; and ours against the numbers the
    analyzer printed when this test was written (so this fails without the
    analyzer too). The text view names the same processes."""
    analyzer = find_analyzer(tmp)
    print("nccl-tests' analyzer:", analyzer or "not found (the recorded numbers only)")
    for in_place, place in ((False, "out-of-place"), (True, "in-place")):
        out = our_numbers(NT_JSON, in_place)
        ours = ours_as_analyzer(out)
        compare_views(ours, EXPECTED[place], f"{place}: ours against the recorded analyzer output")
        if analyzer:
            compare_views(ours, analyzer_numbers(analyzer, NT_JSON, in_place), f"{place}: ours against the analyzer")
    # --sizes and --threshold as the analyzer takes them.
    out = our_numbers(NT_JSON, False, "--sizes", "131072,8388608", "--threshold", "2.5")
    check([e["size"] for e in out["stats"]] == [131072, 8388608] and [e["size"] for e in out["spikes"]] == [],
          "--sizes narrows every view; no iteration is 2.5 x the average", json.dumps(out["spikes"]))
    if analyzer:
        r = run([sys.executable, analyzer, NT_JSON, "--spikes", "--threshold", "2.0"])
        theirs = parse_analyzer(r.stdout)["spikes"]
        ours = ours_as_analyzer(our_numbers(NT_JSON, False, "--threshold", "2.0"))["spikes"]
        check(ours == theirs, "--threshold 2.0: the same spikes", f"{ours}\n{theirs}")
    r = report("analyze", NT_JSON, "--spikes")
    check("iteration 8: 2 of 4 processes spiked, max 52.0 us  processes 0, 1" in r.stdout
          and "iteration 4: 1 of 4 processes spiked, max 222.3 us  STRAGGLER process 2" in r.stdout,
          "the text view: node-a's pair at 128 KiB, process 2 alone at 8 MiB", r.stdout)
    r = report("analyze", NT_JSON, "--nodes", "--procs-per-node", "1")
    check("node-a: processes 0, 1" in r.stdout, "hostnames win over --procs-per-node, as in the analyzer", r.stdout)
    nohosts = json.load(open(NT_JSON))
    for d in nohosts["config"]["devices"]:
        del d["hostname"]
    path = os.path.join(tmp, "nohosts.json")
    json.dump(nohosts, open(path, "w"))
    r = report("analyze", path, "--nodes", "--procs-per-node", "3")
    check("node 0: processes 0, 1, 2" in r.stdout and "node 1: processes 3" in r.stdout,
          "without hostnames: --procs-per-node processes a node", r.stdout)


@test
def smddp_bench_analyzer(tmp):
    """The views on our own smddp-bench -J (--per-iteration under mpirun:
    per_process_max_times_us of 3 ranks on this host): the analyzer reads it,
    and our numbers are its numbers."""
    out = os.path.join(tmp, "bench.json")
    r = run([ARGS.mpirun, "--oversubscribe", "--bind-to", "none", "-np", "3", ARGS.bench, "allreduce", "-b", "8",
             "-e", "1M", "-f", "8", "-n", "12", "-w", "2", "--per-iteration", "-q", "-J", out], timeout=240,
            env={"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"})
    check(r.returncode == 0, "smddp-bench --per-iteration -J under mpirun -np 3", r.stdout + r.stderr)
    analyzer = find_analyzer(tmp)
    for in_place in (False, True):
        ours = ours_as_analyzer(our_numbers(out, in_place))
        check(ours["straggler"] and len(ours["nodes"]) > 0, "smddp-bench JSON: straggler and node views")
        if analyzer:
            compare_views(ours, analyzer_numbers(analyzer, out, in_place), "smddp-bench JSON: ours against the analyzer")
    if not analyzer:
        print("nccl-tests' analyzer not found: our views checked for presence only")


# ---- Inspector ------------------------------------------------------------------------

def load_package():
    sys.path.insert(0, os.path.dirname(os.path.realpath(ARGS.report)))
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.realpath(ARGS.report)), "..", "common", "python"))
    from smddp_report import inspector
    return inspector


@test
def inspector_inputs(tmp):
    """The Inspector's JSON lines and Prometheus text: every record and
    series read; the plugin's Prometheus figures (geometric mean of busbw,
    mean time, per GPU) equal what we compute from the JSON lines of the
    same ranks; the report names them."""
    inspector = load_package()
    records = inspector.parse_jsonl(INSPECTOR_JSONL, open(INSPECTOR_JSONL).read())
    check(len(records) == 30 and sum(r["kind"] == "p2p" for r in records) == 2, "30 records, 2 of them P2P")
    series = inspector.parse_prom(INSPECTOR_PROM, open(INSPECTOR_PROM).read())
    check(len(series) == 9 and all("busbw" in s and "exec_us" in s for s in series),
          "9 label sets, each with bus bandwidth and time")
    gpu_rank = {"GPU0": 0, "GPU1": 1}  # node-a's GPU k is rank k in the fixture
    for s in series:
        mine = [r for r in records if r["rank"] == gpu_rank[s["gpu"]] and r["host"] == s["node"] and
                r["comm_name"] == s["comm_name"] and r["op"] == s["op"] and
                inspector.bucket_bytes(s["message_size"]) <= r["bytes"] < 2 * inspector.bucket_bytes(s["message_size"])]
        check(mine, f"{s['node']}/{s['gpu']} {s['comm_name']} {s['op']} {s['message_size']}: records behind it")
        gm = inspector.geomean([r["busbw"] for r in mine])
        mean = sum(r["exec_us"] for r in mine) / len(mine)
        check(abs(gm - s["busbw"]) <= 1e-5 * s["busbw"] and abs(mean - s["exec_us"]) <= 1e-5 * s["exec_us"],
              f"  its busbw {s['busbw']:g} = the geometric mean, its time {s['exec_us']:g} = the mean of the records",
              f"{gm} {mean}")
    page = os.path.join(tmp, "inspector.html")
    r = report(INSPECTOR_JSONL, INSPECTOR_PROM, "-o", page)
    text = open(page).read()
    check("2 inspector" in r.stderr and "NCCL Inspector JSON lines" in text and "NCCL Inspector Prometheus text" in
          text, "both files read as Inspector output", r.stderr)
    check("30 operations, 2 communicators, 6 ranks, hosts node-a, node-b" in text, "the inputs table counts them")
    for title in ("DP Group 0: bus bandwidth against message size", "DP Group 0: execution time against message size",
                  "DP Group 0: each rank&#x27;s mean time per operation and size",
                  "TP Group 0: bus bandwidth per message-size bucket", "DP Group 0: execution time per message-size bucket"):
        check(f'aria-label="{title}"' in text, f"plot '{title}'")
    r = report("compare", INSPECTOR_JSONL, INSPECTOR_JSONL, expect=64)
    check("NCCL Inspector JSON lines" in r.stderr, "compare refuses Inspector output, naming it", r.stderr)
    r = report("analyze", INSPECTOR_PROM, expect=64)
    check("NCCL Inspector Prometheus text" in r.stderr, "analyze refuses Inspector output, naming it", r.stderr)


# ---- the page in a browser ------------------------------------------------------------

@test
def nccl_formats_browser(tmp):
    """One report of every fixture: every plot drawn with all its points, no
    console error, no request; the per-process views and the Inspector's."""
    page = os.path.join(tmp, "report.html")
    inputs = [NT_JSON] + [os.path.join(FIX, n) for n in LOGS] + [INSPECTOR_JSONL, INSPECTOR_PROM]
    report(*inputs, "-o", page)
    text = open(page).read()
    check("default-src 'none'" in text and not re.search(r"""(src|href)\s*=\s*["']?https?:""", text),
          "a page that loads nothing")
    profile = tempfile.mkdtemp(prefix="chromium-", dir=tmp)
    r = run([ARGS.chromium, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", "--window-size=1280,1000",
             "--virtual-time-budget=5000", "--dump-dom", "file://" + page], timeout=120)
    check(r.returncode == 0 and "</html>" in r.stdout, "chromium loads the report", r.stderr[-3000:])
    root = re.search(r"<html[^>]*>", r.stdout).group(0)
    check('data-status="done"' in root and 'data-errors="0"' in root, "the page's script ran, no error", root)
    figs = re.findall(r'<figure class="plot"([^>]*)>.*?aria-label="([^"]*)"', r.stdout, re.S)
    for attrs, title in figs:
        exp, got = re.search(r'data-expected="(\d+)"', attrs), re.search(r'data-points="(\d+)"', attrs)
        check(exp and got and int(exp.group(1)) > 0 and exp.group(1) == got.group(1),
              f"'{title}': {got and got.group(1)} of {exp and exp.group(1)} points drawn")
    titles = [t for _, t in figs]
    for want in ("allreduce float sum: bus bandwidth against size", "allgather float: bus bandwidth against size",
                 "reducescatter float sum: bus bandwidth against size",
                 "allreduce float sum: each process's mean time per size, out-of-place (nccl-tests-2.19)",
                 "allreduce float sum: stragglers, ranks against sizes (nccl-tests-2.19)",
                 "DP Group 0: bus bandwidth against message size", "TP Group 0: bus bandwidth per message-size bucket"):
        check(want.replace("'", "&#x27;") in titles or want in titles, f"plot '{want}'", "\n".join(titles))
    check(not any("stragglers" in t and "log)" in t for t in titles) and
          not any(t.endswith("(nccl-tests-2.19-I1)") and "stragglers" in t for t in titles),
          "no straggler picture for a log (a log has no rank's times)", "\n".join(titles))
    for table in ("stragglers, out-of-place", "spikes, in-place", "iteration 0 against the rest",
                  "nodes of nccl-tests-2.16-all_gather: 3 hosts, 6 ranks"):
        check(table in text, f"table '{table}'")


# ---- bad input --------------------------------------------------------------------------

def one_line_64(r, why, what):
    lines = r.stderr.strip().splitlines()
    check(r.returncode == 64 and len(lines) == 1 and why in r.stderr and "Traceback" not in r.stderr,
          f"{what}: exit 64, one line saying '{why}'", f"exit {r.returncode}\n{r.stderr}")


@test
def nccl_formats_bad_input(tmp):
    """Each new kind of bad input: one line naming the file and the place,
    exit 64, before anything is written, from report, compare and analyze."""
    nt = json.load(open(NT_JSON))
    log = open(os.path.join(FIX, "nccl-tests-2.19-I1.log")).read()
    jsonl = open(INSPECTOR_JSONL).read().splitlines()
    prom = open(INSPECTOR_PROM).read().splitlines()

    def edited(**change):
        d = json.loads(json.dumps(nt))
        for where, value in change.items():
            target = d
            *path, last = where.split("__")
            for k in path:
                target = target[int(k)] if k.isdigit() else target[k]
            target[int(last) if last.isdigit() else last] = value
        return json.dumps(d)

    cut = log.index("     1048576")  # line 19
    rows = [line for line in log.splitlines() if re.match(r"\s*\d+\s+\d+\s", line)]  # lines 16..20

    def field(row, k, text):
        """The log with field k of rows[row] replaced."""
        f = rows[row].split()
        f[k] = text
        return log.replace(rows[row], "  ".join(f))
    cases = {
        "truncated.log": (log[:cut + 60], "line 19: a row of 6 fields where the header (line 14) has 21"),
        "cut-header.log": (log[:log.index("#       size")], "without its column header"),
        "no-rows.log": (log[:log.index(rows[0])], "without result rows (line 14 is its header)"),
        "inf.log": (field(2, 6, "inf"), "line 18: out-of-place algbw inf is not a finite"),
        "huge.log": (field(0, 0, "9" * 25), "line 16: size '9999"),
        "big.log": (field(3, 5, "1e300"), "line 19: out-of-place time 1e300 is not a finite number"),
        "nan.log": (field(1, 5, "nan"), "line 17: out-of-place time nan is not a finite"),
        "word.log": (field(4, 14, "fast"), "line 20: in-place algbw 'fast' is not a number"),
        "shape.json": (edited(results__1__out_of_place__time=[1]), "results[1].out_of_place.time: expected a number"),
        "type.json": (edited(results__0__size="8"), "results[0].size: expected a whole number"),
        "root.json": (edited(results__0__root="x"), "results[0].root: 'x' is not a rank"),
        "procs.json": (edited(results__2__out_of_place_per_iter__per_process_max_times_us__1=[]),
                       "per_process_max_times_us[1]: an empty list"),
        "nan.json": (json.dumps(nt).replace('"time": 2', '"time": NaN, "x": 2', 1), "NaN is not a number JSON allows"),
        "huge.json": (edited(results__0__size=10 ** 30), "is out of range"),
        "big-time.json": (edited(results__0__in_place__time=1e300), "results[0].in_place.time: 1e+300 is out of range"),
        "nocoll.json": (edited(args=["./a.out"]), "a result names no collective"),
        "avg.json": (edited(average_bus_bandwidth__bandwidth={"x": 1}), "average_bus_bandwidth.bandwidth: expected a"),
        "truncated.jsonl": ("\n".join(jsonl[:5] + [jsonl[5][:90]]) + "\n", "line 6: not JSON"),
        "shape.jsonl": ("\n".join(jsonl[:3] + [jsonl[3].replace('"rank":3', '"rank":"3"')]) + "\n",
                        "line 4: record.header.rank: expected a whole number"),
        "other.jsonl": (jsonl[0] + "\n" + '{"hello": 1}\n', "line 2: not an Inspector record"),
        "nan.prom": ("\n".join(prom[:4] + [prom[4].rsplit(" ", 1)[0] + " NaN"]) + "\n",
                     "line 5: nccl_bus_bandwidth_gbs NaN is not a finite number"),
        "huge.prom": ("\n".join(prom[:2] + [prom[2].rsplit(" ", 1)[0] + " 1e300"]) + "\n",
                      "line 3: nccl_bus_bandwidth_gbs 1e300 is not a finite"),
        "label.prom": ("\n".join(prom[:1] + [prom[1].replace('node="node-a"', "node=node-a")]) + "\n",
                       "line 2: labels not of the form"),
        "count.prom": (prom[0].replace('nranks="2"', 'nranks="two"') + "\n", 'line 1: label nranks="two" is not a count'),
        "noop.prom": (re.sub(r'collective="[^"]*",', "", prom[0]) + "\n", "without its 'collective' label"),
        "empty.txt": ("", "not a results document"),
        "prose.txt": ("hello\nworld\n", "not a results document"),
    }
    out = os.path.join(tmp, "out.html")
    for name, (content, why) in cases.items():
        path = os.path.join(tmp, name)
        open(path, "w").write(content)
        r = run([sys.executable, ARGS.report, path, "-o", out], timeout=30)
        one_line_64(r, why, name)
        check(name in r.stderr, f"{name}: the line names the file", r.stderr)
        if not name.endswith((".prom", ".jsonl")):
            one_line_64(run([sys.executable, ARGS.report, "compare", path, NT_JSON], timeout=30), why,
                        f"compare {name}")
            one_line_64(run([sys.executable, ARGS.report, "analyze", path], timeout=30), why, f"analyze {name}")
    check(not os.path.exists(out), "no report written from any bad input")
    # Found by fuzz_python: N/A where a bandwidth was, a 5000-digit count in the preamble: read, not a crash.
    for name, content in (("na.log", field(0, 7, "N/A")),
                          ("digits.log", log.replace("nThread 1 ", "nThread " + "1" * 5000 + " ", 1))):
        path = os.path.join(tmp, name)
        open(path, "w").write(content)
        report(path, "-o", os.path.join(tmp, "ok.html"))
    # nccl-tests writes a NaN double as the string "nan": that placement has no time, the rest is read.
    path = os.path.join(tmp, "nan-string.json")
    open(path, "w").write(edited(results__0__out_of_place__time="nan"))
    r = report("compare", path, path)
    check(len(compare_lines(r.stdout)) == 9, "a \"nan\" time: that row left out, 9 of 10 read", r.stdout)
    for args, why in ((["analyze", NT_JSON, "--sizes", "8,x"], "--sizes 'x'"),
                      (["analyze", NT_JSON, "--threshold", "nan"], "--threshold"),
                      (["analyze", NT_JSON, "--procs-per-node", "0"], "--procs-per-node"),
                      (["analyze"], "the following arguments are required")):
        one_line_64(run([sys.executable, ARGS.report, *args], timeout=30), why, " ".join(args[:1] + args[2:]))


def main():
    global ARGS
    ARGS, fn = parse_and_pick(TESTS, {"--report": True, "--bench": False, "--mpirun": False,
                                      "--chromium": shutil.which("chromium") or "/usr/bin/chromium"})
    with tempfile.TemporaryDirectory(prefix="smddp-nccl-formats-") as tmp:
        fn(tmp)
    print("PASS")


if __name__ == "__main__":
    main()
