#!/usr/bin/env python3
"""End-to-end tests of smddp-report and of smddp-bench's progress line.

Usage: report_e2e.py --report PATH --bench PATH --diag PATH --mpirun PATH [--chromium PATH] TEST

Every input comes from a real run (smddp-bench and smddp-diag under mpirun)
except the smddp-model file, which does not exist yet and is written here
from the measured rows. Every subprocess has a time limit (a hang guard, not
an assertion); generated data takes a random seed, printed first
(SMDDP_TEST_SEED=N replays it).
"""
import html.parser
import json
import math
import os
import random
import re
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from harness import SEED, Tests, check, parse_and_pick, run  # noqa: E402  (tests/e2e/harness.py)

ARGS = None
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync",
                  "--enable-logging=stderr", "--v=0"]
TESTS = Tests()
test = TESTS  # the decorator










def mpirun(np, *args):
    return [ARGS.mpirun, "--oversubscribe", "--bind-to", "none", "-np", str(np), *args]


def bench(np, out, *args):
    """A real sweep: checked, per-iteration timings, a ratio and the roofline."""
    r = run(mpirun(np, ARGS.bench, *args, "--seed", str(SEED), "-J", out))
    check(r.returncode == 0, f"smddp-bench {' '.join(args)} exits 0", r.stdout + r.stderr)
    return json.load(open(out))


SWEEP = ["allreduce", "barrier", "-b", "64K", "-e", "1M", "-f", "4", "-n", "10", "-w", "2", "--backend", "smddp,mpi",
         "--per-iteration", "--roofline", "-q"]


def report(*args, expect=0):
    r = run([sys.executable, ARGS.report, *args], timeout=120)
    check(r.returncode == expect, f"smddp-report {' '.join(os.path.basename(a) for a in args)} exits {expect}",
          f"exit {r.returncode}\n{r.stdout}\n{r.stderr}")
    return r


class Figures(html.parser.HTMLParser):
    """Each <figure class="plot">: its attributes and the first aria-label inside (the plot's title)."""

    def __init__(self):
        super().__init__()
        self.figures, self.root, self._open = [], {}, None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "html":
            self.root = a
        if tag == "figure" and "plot" in (a.get("class") or ""):
            self._open = dict(a, title=None)
            self.figures.append(self._open)
        elif self._open is not None and self._open["title"] is None and "aria-label" in a:
            self._open["title"] = a["aria-label"]


def browse(page, tmp):
    """Loads the page in headless chromium; returns (parsed DOM, console lines)."""
    profile = tempfile.mkdtemp(prefix="chromium-", dir=tmp)
    r = run([ARGS.chromium, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", "--window-size=1280,1000",
             "--virtual-time-budget=5000", "--dump-dom", "file://" + os.path.abspath(page)], timeout=120)
    check(r.returncode == 0 and "</html>" in r.stdout, "chromium loads the report", r.stderr[-3000:])
    dom = Figures()
    dom.feed(r.stdout)
    console = [l for l in r.stderr.splitlines() if ":CONSOLE" in l]
    return dom, console, r.stdout


def static_offline(text):
    """Nothing on the page can load from the network: no http(s) URL in src,
    href, action, CSS url() or @import, no <link>, and a CSP of default-src 'none'."""
    loads = re.findall(r"""(?:\b(?:src|href|action|poster|data)\s*=\s*["']?\s*(?:https?:)?//|url\(\s*["']?\s*(?:https?:)?//"""
                       r"""|@import|<link\b|<iframe\b|<object\b)""", text, re.I)
    check(not loads, "the HTML references nothing to load from the network", str(loads[:5]))
    check("default-src 'none'" in text, "a Content-Security-Policy forbids every request")


def write_model(path, bench_doc):
    """An smddp-model file (docs/report.md): predictions near the measured smddp rows."""
    rng = random.Random(SEED)
    rows = []
    for r in bench_doc["rows"]:
        if r["collective"] == "allreduce" and r["backend"] == "smddp" and r["placement"] == "out-of-place":
            rows.append({"collective": "allreduce", "bytes": r["bytes"], "dtype": r["dtype"], "backend": "smddp",
                         "placement": "out-of-place", "nranks": bench_doc["nranks"],
                         "predicted_us": r["time_us"] * rng.uniform(0.7, 1.3), "model": "alpha-beta"})
    json.dump({"tool": "smddp-model", "version": "test", "rows": rows}, open(path, "w"))
    return len(rows)


@test
def report_browser(tmp):
    """A report of two real sweeps, a fabric matrix, preflight and isolate
    verdicts and model predictions: every plot drawn with all its points, no
    console error, no request."""
    run_a, run_b = os.path.join(tmp, "nightly-a.json"), os.path.join(tmp, "nightly-b.json")
    doc = bench(2, run_a, *SWEEP)
    bench(2, run_b, *SWEEP)
    fabric = os.path.join(tmp, "fabric.json")
    r = run(mpirun(3, ARGS.diag, "fabric", "--provider", "tcp", "--json", "--slow-factor", "0", "--bw-bytes", "64K",
                   "--latency-iters", "10"), env={"SMDDP_TIMEOUT": "60"})
    check(r.returncode == 0 and '"pingpong"' in r.stdout, "smddp-diag fabric under mpirun -np 3 writes a link matrix",
          r.stderr)
    open(fabric, "w").write(r.stdout)
    preflight = os.path.join(tmp, "preflight.json")
    r = run(mpirun(2, ARGS.diag, "preflight", "--profile", "local", "--skip", "gpu_count,efa_count", "--json",
                   preflight), env={"SMDDP_TIMEOUT": "60"})
    check(r.returncode in (0, 1) and os.path.exists(preflight), "smddp-diag preflight under mpirun writes its report",
          r.stdout + r.stderr)
    pre = json.load(open(preflight))
    # isolate does not exist yet; its documented shape is preflight's per-node
    # verdicts under its own tool name (docs/report.md).
    isolate = os.path.join(tmp, "isolate.json")
    json.dump(dict(pre, tool="smddp-diag isolate"), open(isolate, "w"))
    model = os.path.join(tmp, "model.json")
    predictions = write_model(model, doc)

    page = os.path.join(tmp, "report.html")
    report(run_a, run_b, fabric, preflight, isolate, model, "-o", page)
    text = open(page).read()
    static_offline(text)
    dom, console, dumped = browse(page, tmp)
    check(dom.root.get("data-status") == "done", "the page's script ran to the end", dumped[:2000])
    errors = re.search(r'<pre id="report-errors"[^>]*>(.*?)</pre>', dumped, re.S)
    check(dom.root.get("data-errors") == "0", "no error, console error or blocked request recorded by the page",
          errors.group(1) if errors else "")
    check(console == [], "chromium's log shows no console message", "\n".join(console))
    for f in dom.figures:
        check(int(f["data-expected"]) > 0 and f.get("data-points") == f["data-expected"],
              f"'{f['title']}': {f.get('data-points')} of {f['data-expected']} data points drawn")
    titles = [f["title"] or "" for f in dom.figures]
    nodes, links = len(pre["nodes"]), 3
    want = {  # plot -> (how many, data points of the first)
        # both runs overlaid: 3 sizes x 2 backends x 2 placements each
        "allreduce float sum: bus bandwidth against size": (1, 2 * 12),
        "allreduce float sum: ratio against the first backend": (1, None),
        "allreduce float sum: time per call, p50 to p99 band": (1, None),
        "allreduce float sum: stragglers, ranks against sizes (nightly-a)": (1, 2 * 3),
        "barrier float: time per call, p50 to p99 band": (1, None),
        "allreduce: predicted against measured time": (1, 2 * predictions),
        "link latency (us) between ranks, tcp;ofi_rxm": (1, 2 * links),
        "link bandwidth (GB/s) between ranks, tcp;ofi_rxm": (1, 2 * links),
        "smddp-diag preflight: checks per node, profile local": (1, None),
        "smddp-diag isolate: checks per node, profile local": (1, None),
    }
    for title, (count, points) in want.items():
        found = [f for f in dom.figures if f["title"] == title]
        check(len(found) == count, f"plot '{title}' present", "\n".join(titles))
        if points is not None:
            check(int(found[0]["data-points"]) == points, f"'{title}' has {points} points", found[0]["data-points"])
    data = json.loads(re.search(r'<script type="application/json" id="report-data">(.*?)</script>', text, re.S)
                      .group(1).replace("<\\/", "</"))
    labels = [d["label"] for c in data["charts"].values() for d in c["datasets"]]
    check(any(l.startswith("nightly-a: ") for l in labels) and any(l.startswith("nightly-b: ") for l in labels),
          "series of both runs are named by run")
    check(any(l.startswith("nightly-a: roofline: host copy") for l in labels), "the measured roofline is drawn")
    check(f"{nodes} nodes" in text, "the verdict table covers every node")


def doubled(doc):
    """The same run, every time twice as long (bandwidths halved)."""
    out = json.loads(json.dumps(doc))
    for r in out["rows"]:
        r["time_us"] *= 2
        for k in ("algbw_gbps", "busbw_gbps"):
            r[k] /= 2
        for k, v in (r.get("per_iteration") or {}).items():
            if k.endswith("_us"):
                r["per_iteration"][k] = [x * 2 for x in v] if isinstance(v, list) else v * 2
    return out


COMPARE_SWEEP = ["allreduce", "-b", "256K", "-e", "512K", "-f", "2", "-n", "20", "-w", "5", "--algorithm",
                 "shm_direct", "--per-iteration", "-q"]


def names_of(doc):
    return {f"{r['collective']} {r['dtype']} {r['op']} {r['bytes']} B {r['backend']}/{r['algorithm']} "
            f"{r['placement']} np{doc['nranks']}" for r in doc["rows"]}


def without_samples(doc):
    """The document as a writer of percentiles only (an older smddp-bench) writes it."""
    out = json.loads(json.dumps(doc))
    for r in out["rows"]:
        (r.get("per_iteration") or {}).pop("samples_us", None)
    return out


@test
def compare_identical_doubled(tmp):
    """The same file: 0. Every time doubled: 2, with every row named; tested
    on the calls (Mann-Whitney U), or on samples rebuilt from percentiles
    for a file that has only those."""
    base = os.path.join(tmp, "base.json")
    doc = bench(2, base, *COMPARE_SWEEP)
    r = report("compare", base, base, expect=0)
    check(f"no regression in {len(doc['rows'])} matched rows" in r.stdout, "identical files: no regression", r.stdout)
    for test_name, transform in (("mann-whitney", lambda d: d), ("u-quantiles", without_samples)):
        base = os.path.join(tmp, f"base-{test_name}.json")
        slow = os.path.join(tmp, f"slow-{test_name}.json")
        json.dump(transform(doc), open(base, "w"))
        json.dump(transform(doubled(doc)), open(slow, "w"))
        r = report("compare", base, slow, expect=2)
        verdict = r.stdout.strip().splitlines()[-1]
        table = {}
        for line in r.stdout.splitlines():
            m = re.match(r"^(allreduce .*? np2)\s+p50\s+\S+\s+\S+\s+(\S+)\s+(\S+)\s+\S+\s+(\S+)$", line)
            if m:
                table[m.group(1)] = m.group(2, 3, 4)
        check(set(table) == names_of(doc), f"{test_name}: doubled times: one line per row", r.stdout)
        check(all(v[:2] == ("2.000", test_name) and v[2] in ("regressed", "noise") for v in table.values()),
              f"{test_name}: every row 2.000 times slower by the median, never 'same'", r.stdout)
        regressed = [name for name, v in table.items() if v[2] == "regressed"]
        # A row whose own calls spread wider than 2x (a preempted run) may stay
        # 'noise'; the U test is on ranks, so most rows do not.
        print(f"{test_name}: {len(regressed)} of {len(table)} rows significant")
        check(verdict.startswith(f"REGRESSION in {len(regressed)} of {len(table)} matched rows past 10%: "),
              f"{test_name}: the verdict counts the regressed rows", verdict)
        for name in regressed:
            check(f"{name} (x2.00, {test_name} p=" in verdict, f"the verdict names '{name}' with its ratio and test")
        r = report("compare", base, slow, "--markdown", expect=2)
        rows = [line for line in r.stdout.splitlines() if line.startswith("| allreduce")]
        check(len(rows) == len(doc["rows"]) and all(f"| 2.000 | {test_name} |" in line for line in rows)
              and sum("| **regressed** |" in line for line in rows) == len(regressed),
              f"{test_name} --markdown: one table row per matched row, ratio 2.000, the same rows regressed",
              r.stdout)
        # The threshold is the size of the difference that counts: 2x is below 150%.
        report("compare", base, slow, "--threshold", "150", expect=0)


def calls_row(size, calls):
    """A row as smddp-bench --per-iteration writes it: its calls, their mean,
    upper median and nearest-rank percentiles (1-based rank ceil(p * n))."""
    s = sorted(calls)
    at = {k: s[math.ceil(p * len(s)) - 1] for k, p in (("p95_us", .95), ("p99_us", .99))}
    return {"collective": "allreduce", "dtype": "float", "op": "sum", "root": -1, "bytes": size,
            "backend": "smddp", "algorithm": "ring", "placement": "out-of-place", "time_us": sum(s) / len(s),
            "algbw_gbps": 1.0, "busbw_gbps": 1.0, "iterations": len(s),
            "per_iteration": {"min_us": s[0], "p50_us": s[len(s) // 2], "max_us": s[-1], **at,
                              "samples_us": calls}}


def compare_verdicts(tmp, name, base_rows, new_rows):
    paths = []
    for tag, rows in (("base", base_rows), ("new", new_rows)):
        paths.append(os.path.join(tmp, f"{name}-{tag}.json"))
        json.dump({"tool": "smddp-bench", "nranks": 2, "rows": rows, "complete": True}, open(paths[-1], "w"))
    r = run([sys.executable, ARGS.report, "compare", *paths], timeout=120)
    check(r.returncode in (0, 2), f"{name}: compare ends 0 or 2", r.stdout + r.stderr)
    verdicts = re.findall(r" (same|noise|regressed|improved)$", r.stdout, re.M)
    check(len(verdicts) == len(base_rows), f"{name}: one verdict per row", r.stdout)
    return verdicts


@test
def compare_noise(tmp):
    """Calls that spread wide but do not move are noise, not a regression;
    the same spread moved by 30% is. 400 pairs of rows of 20 calls each,
    as smddp-bench writes them, drawn from known distributions (lognormal,
    sigma 0.25, as a loaded 2-core machine spreads them, and one call in ten
    preempted 3-10x): flagged pairs of one distribution stay near the
    test's alpha (5%; about 19 of 400, at most 27 in 100 seeds), regressed
    pairs 30% apart are most (about 280 of 400, at least 249). Then two
    real runs, compared row by row on their calls, whatever the machine did
    between them: no assertion on the times."""
    rng = random.Random(SEED)
    pairs = 400

    def calls(scale):
        return [scale * rng.lognormvariate(math.log(40), 0.25) * (rng.uniform(3, 10) if rng.random() < .1 else 1)
                for _ in range(20)]

    sizes = [1024 * (i + 1) for i in range(pairs)]
    base = [calls_row(size, calls(1)) for size in sizes]
    same = compare_verdicts(tmp, "same", base, [calls_row(size, calls(1)) for size in sizes])
    false_alarms = same.count("regressed") + same.count("improved")
    print(f"same distribution: {false_alarms} of {pairs} pairs flagged; verdicts "
          f"{ {v: same.count(v) for v in set(same)} }")
    check(false_alarms <= 0.1 * pairs, "same distribution: at most 10% of pairs flagged (alpha 5%)")
    slow = compare_verdicts(tmp, "slow", base, [calls_row(size, calls(1.3)) for size in sizes])
    print(f"30% slower: {slow.count('regressed')} of {pairs} pairs regressed")
    check(slow.count("regressed") >= 0.5 * pairs and slow.count("improved") == 0,
          "30% slower: most pairs regressed, none improved")

    a, b = os.path.join(tmp, "a.json"), os.path.join(tmp, "b.json")
    doc = bench(2, a, *COMPARE_SWEEP)
    bench(2, b, *COMPARE_SWEEP)
    r = run([sys.executable, ARGS.report, "compare", a, b], timeout=60)
    print(r.stdout)
    check(r.returncode in (0, 2), "two real runs: compare ends 0 or 2", r.stderr)
    check(all(len(row["per_iteration"]["samples_us"]) == row["iterations"] == 20 for row in doc["rows"]),
          "smddp-bench --per-iteration writes each row's 20 calls")
    named = {m.group(1) for m in re.finditer(r"^(allreduce .*? np2)\s+p50\s.* mann-whitney ", r.stdout, re.M)}
    check(named == names_of(doc), "two real runs: every row judged on its calls (Mann-Whitney U)", r.stdout)


@test
def compare_nothing_common(tmp):
    """Files with no row in common, or not results at all: 64 and why."""
    a, b = os.path.join(tmp, "allreduce.json"), os.path.join(tmp, "allgather.json")
    bench(2, a, "allreduce", "-b", "64K", "-e", "128K", "-n", "3", "-q")
    bench(2, b, "allgather", "-b", "64K", "-e", "128K", "-n", "3", "-q")
    r = report("compare", a, b, expect=64)
    check(r.stdout == "" and len(r.stderr.strip().splitlines()) == 1 and "nothing to compare" in r.stderr
          and "allreduce" in r.stderr and "allgather" in r.stderr, "one line naming what each file holds", r.stderr)
    c = os.path.join(tmp, "np3.json")
    bench(3, c, "allreduce", "-b", "64K", "-e", "128K", "-n", "3", "-q")
    r = report("compare", a, c, expect=64)
    check("np 2" in r.stderr and "np 3" in r.stderr, "another rank count matches nothing", r.stderr)


@test
def compare_samples(tmp):
    """Raw samples (per_iteration.samples_us, as smddp-bench and other
    writers write them): the Mann-Whitney U test."""
    rng = random.Random(SEED)

    def doc(scale, shift_seed):
        r2 = random.Random(shift_seed)
        rows = []
        for size in (1 << 16, 1 << 20):
            samples = [scale * size / 1e3 * r2.lognormvariate(0, 0.1) for _ in range(30)]
            rows.append({"collective": "allreduce", "dtype": "float32", "op": "sum", "root": -1, "bytes": size,
                         "backend": "smddp", "algorithm": "ring", "placement": "out-of-place",
                         "time_us": sum(samples) / 30, "busbw_gbps": 1.0, "iterations": 30,
                         "per_iteration": {"samples_us": samples, "p50_us": sorted(samples)[15]},
                         "future_key": {"ignored": True}})
        return {"tool": "smddp-bench", "nranks": 4, "rows": rows, "complete": True}

    base, same, slow = (os.path.join(tmp, n) for n in ("base.json", "same.json", "slow.json"))
    base_seed = rng.random()
    json.dump(doc(1, base_seed), open(base, "w"))
    json.dump(doc(1, rng.random()), open(same, "w"))
    json.dump(doc(1.5, base_seed), open(slow, "w"))  # the same calls, each 1.5 times as long
    r = report("compare", base, same, expect=0)
    check("mann-whitney" in r.stdout, "samples in both: the U test", r.stdout)
    r = report("compare", base, slow, expect=2)
    check("allreduce float32 sum 65536 B smddp/ring out-of-place np4 (x1.50" in r.stdout
          and "mann-whitney p=" in r.stdout, "50% slower samples: regressed, named, with the U test", r.stdout)


@test
def report_bad_input(tmp):
    """Not a results document, broken JSON, bad rows, bad options, no chart
    library: exit 64 with one line saying why."""
    cases = {
        "other.json": ('{"hello": "world"}', "not a results document"),
        "broken.json": ('{"tool": "smddp-bench", "rows": [', "not JSON"),
        "badrow.json": ('{"tool": "smddp-bench", "rows": [{"collective": "allreduce"}]}', "rows[0]: 'bytes' is missing"),
        "list.json": ("[1, 2]", "not a results document"),
    }
    for name, (content, why) in cases.items():
        path = os.path.join(tmp, name)
        open(path, "w").write(content)
        r = report(path, "-o", os.path.join(tmp, "x.html"), expect=64)
        check(len(r.stderr.strip().splitlines()) == 1 and why in r.stderr and name in r.stderr,
              f"{name}: one line saying '{why}'", r.stderr)
        report("compare", path, path, expect=64)
    check(not os.path.exists(os.path.join(tmp, "x.html")), "no report written from bad input")
    pre = os.path.join(tmp, "pre.json")
    json.dump({"tool": "smddp-diag preflight", "profile": "local", "nodes": [{"host": "h", "healthy": True}]},
              open(pre, "w"))
    r = report("compare", pre, pre, expect=64)
    check("compare takes smddp-bench results" in r.stderr, "compare refuses a preflight report", r.stderr)
    r = report("--chartjs", os.path.join(tmp, "none.js"), pre, expect=64)
    check("not found" in r.stderr, "a missing chart library is named", r.stderr)
    for args in (["compare", pre], ["compare", pre, pre, "--threshold", "x"], ["--bogus", pre], []):
        r = report(*args, expect=64)
        check(len(r.stderr.strip().splitlines()) == 1, f"usage {args}: one line", r.stderr)


BENCH_DOC = {"tool": "smddp-bench", "nranks": 2, "rows": [
    {"collective": "allreduce", "bytes": 1024, "backend": "smddp", "time_us": 5.0, "busbw_gbps": 0.2},
    {"collective": "allreduce", "bytes": 4096, "backend": "smddp", "time_us": 9.0, "busbw_gbps": 0.5}]}


def one_line_64(r, why, what):
    lines = r.stderr.strip().splitlines()
    check(r.returncode == 64 and len(lines) == 1 and why in r.stderr and "Traceback" not in r.stderr,
          f"{what}: exit 64, one line saying '{why}'", f"exit {r.returncode}\n{r.stderr}")


def hostile_run(args, timeout=20):
    return run([sys.executable, ARGS.report, *args], timeout=timeout)


@test
def report_hostile_input(tmp):
    """issue 36's classes for smddp-report: special files as inputs and
    outputs, non-finite and huge numbers, deep nesting, invalid UTF-8, wrong
    types, out-of-range indexes, hex and non-finite options; each one line
    and exit 64, no file replaced, no temporary left, no hang."""
    good = os.path.join(tmp, "good.json")
    json.dump(BENCH_DOC, open(good, "w"))
    out = os.path.join(tmp, "out.html")
    # Inputs that are not regular files: refused at once, a FIFO without a writer too.
    fifo = os.path.join(tmp, "fifo")
    os.mkfifo(fifo)
    for path, why in ((fifo, "not a regular file"), (tmp, "a directory"), ("/dev/zero", "not a regular file")):
        one_line_64(hostile_run([path, "-o", out]), why, f"input {path}")
        one_line_64(hostile_run(["compare", good, path]), why, f"compare input {path}")
    # Documents: what each breaks, and the words that say so.
    texts = {
        "nan.json": ('{"tool": "smddp-bench", "rows": [{"collective": "allreduce", "bytes": 8, "backend": "smddp", '
                     '"time_us": NaN}]}', "NaN"),
        "inf.json": ('{"tool": "smddp-bench", "rows": [{"collective": "allreduce", "bytes": 8, "backend": "smddp", '
                     '"time_us": 1e999}]}', "overflows"),
        "huge.json": ('{"tool": "smddp-bench", "rows": [{"collective": "allreduce", "bytes": 1' + "0" * 30 +
                      ', "backend": "smddp", "time_us": 1}]}', "out of range"),
        "deep.json": ('{"tool": "smddp-bench", "rows": [], "x": ' + "[" * 5000 + "]" * 5000 + "}", "nested deeper"),
        "surrogate.json": ('{"tool": "smddp-bench", "rows": [{"collective": "\\ud800", "bytes": 8, '
                           '"backend": "smddp", "time_us": 1}]}', "surrogate"),
        "type.json": ('{"tool": "smddp-bench", "rows": [{"collective": "allreduce", "bytes": 8, "backend": "smddp", '
                      '"time_us": 1, "straggler": {"rank": [1]}}]}', "straggler.rank: expected a whole number"),
        "ranks.json": ('{"tool": "smddp-bench", "nranks": 99999999999, "rows": []}', "out of range"),
        "index.json": ('{"pingpong": {"ranks": 2, "links": [{"a": 0, "b": 7, "latency_us": 1}]}}', "rank 7"),
        "matrix.json": ('{"pingpong": {"ranks": 100000, "links": []}}', "out of range"),
        "stamp.json": ('{"tool": "smddp-diag preflight", "timestamp_ms": 1e300, "nodes": [{"host": "h", '
                       '"healthy": true}]}', "timestamp_ms"),
    }
    for name, (text, why) in texts.items():
        path = os.path.join(tmp, name)
        open(path, "w").write(text)
        one_line_64(hostile_run([path, "-o", out]), why, name)
    bad_utf8 = os.path.join(tmp, "latin1.json")
    open(bad_utf8, "wb").write(b'{"tool": "smddp-bench\xff", "rows": []}')
    one_line_64(hostile_run([bad_utf8, "-o", out]), "not UTF-8", "invalid UTF-8")
    check(not os.path.exists(out), "no report from any bad input")
    # Options: decimal and finite only.
    for value in ("nan", "inf", "0x10", "1e999", "-1"):
        one_line_64(hostile_run(["compare", good, good, "--threshold", value]), "--threshold", f"--threshold {value}")
    for value in ("nan", "0x1p-3", "1", "0"):
        one_line_64(hostile_run(["compare", good, good, "--alpha", value]), "--alpha", f"--alpha {value}")
    # Outputs, as smddp-bench's atomic writer: a device is written in place,
    # never replaced (as root -o /dev/null would replace the system's).
    null_before = os.stat("/dev/null")
    r = hostile_run([good, "-o", "/dev/null"])
    check(r.returncode == 0 and os.stat("/dev/null").st_rdev == null_before.st_rdev and
          not os.path.exists("/dev/null.tmp"), "-o /dev/null writes into the device, replaces nothing", r.stderr)
    # A symbolic link is written through: the link stays, its target is the report.
    target = os.path.join(tmp, "target.html")
    open(target, "w").write("old")
    link = os.path.join(tmp, "link.html")
    os.symlink("target.html", link)
    r = hostile_run([good, "-o", link])
    check(r.returncode == 0 and os.path.islink(link) and "<!DOCTYPE html>" in open(target).read(),
          "-o through a symbolic link writes its target and keeps the link", r.stderr)
    # A hard-linked file is refused: replacing it would split the links.
    hard = os.path.join(tmp, "hard.html")
    os.link(target, hard)
    before = open(target).read()
    one_line_64(hostile_run([good, "-o", hard]), "hard links", "-o a hard-linked file")
    check(open(target).read() == before, "the hard-linked file is unchanged")
    # A FIFO with no reader: refused, no wait, no temporary.
    one_line_64(hostile_run([good, "-o", fifo]), "no reader", "-o a FIFO without a reader")
    one_line_64(hostile_run([good, "-o", tmp]), "directory", "-o a directory")
    one_line_64(hostile_run([good, "-o", os.path.join(tmp, "missing", "r.html")]), "does not exist",
                "-o into a missing directory")
    left = [n for n in os.listdir(tmp) if ".tmp" in n]
    check(not left, "no temporary file left behind", str(left))


def script(command, log, timeout=180):
    """Runs a shell command on a fresh pseudo-terminal (util-linux script),
    the typescript in log, as an operator's terminal would see it."""
    r = run(["script", "-qec", command, log], timeout=timeout)
    return r, open(log, "rb").read().decode(errors="replace")


PROGRESS = re.compile(r"\[row (\d+) of (\d+)\] elapsed")


@test
def progress_mpirun_tty(tmp):
    """Under mpirun on a terminal rank 0 draws the progress line on it; with
    the output redirected, or without a terminal, it appears nowhere."""
    sweep = " ".join([ARGS.mpirun, "--oversubscribe", "--bind-to", "none", "-np", "2", ARGS.bench, "allreduce", "-b",
                      "1K", "-e", "64K", "-f", "4", "-n", "3", "-w", "1"])
    r, tty = script(sweep, os.path.join(tmp, "tty.log"))
    check(r.returncode == 0, "the sweep on a terminal exits 0", tty)
    rows = sorted({int(m.group(1)) for m in PROGRESS.finditer(tty)})
    check(rows == [1, 2, 3, 4] and "of 4]" in tty, f"the terminal shows the progress of rows 1..4 (saw {rows})", tty)
    check("\r\x1b[K" in tty, "the line is rewritten in place")

    out, err = os.path.join(tmp, "out.txt"), os.path.join(tmp, "err.txt")
    r, tty = script(f"{sweep} >{out} 2>{err}", os.path.join(tmp, "redirected.log"))
    logs = open(out).read() + open(err).read()
    check(r.returncode == 0 and "65536" in logs, "the redirected sweep wrote its table", logs)
    check(not PROGRESS.search(logs) and "\x1b[K" not in logs, "no progress line in redirected output", logs)
    check(not PROGRESS.search(tty), "nor on the terminal the output was redirected away from", tty)

    r = run(sweep.split(), timeout=180)
    check(r.returncode == 0 and not PROGRESS.search(r.stdout + r.stderr) and "\x1b[K" not in r.stdout + r.stderr,
          "no terminal (a pipe, as in CI logs): no progress line", r.stderr)

    r, tty = script(f"{sweep} --progress >{out} 2>{err}", os.path.join(tmp, "forced.log"))
    logs = open(out).read() + open(err).read()
    check(r.returncode == 0 and PROGRESS.search(tty) and not PROGRESS.search(logs),
          "--progress: on the terminal even with the output redirected, and still not in the files", tty + logs)


def main():
    global ARGS
    ARGS, fn = parse_and_pick(TESTS, {"--report": True, "--bench": True, "--diag": True, "--mpirun": True,
                                      "--chromium": shutil.which("chromium") or "/usr/bin/chromium"}, seed=True)
    with tempfile.TemporaryDirectory(prefix="smddp-report-") as tmp:
        fn(tmp)
    print("PASS")


if __name__ == "__main__":
    main()
