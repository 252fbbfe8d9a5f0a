"""nccl-tests' own outputs, read as smddp-report reads smddp-bench's:

  * the -J/--output_file JSON (nccl-tests 2.18 and 2.19: `version` 1 to 3;
    `config` with one `devices` entry per process, `results` per size with
    `out_of_place`/`in_place` bodies and, with -I 1, their `*_per_iter`
    objects), and the same part of smddp-bench's -J, which writes it too;
  * the text log (stdout) of nccl-tests 2.0 onwards, read by its column
    header, so every version's columns are found by name (docs/report.md).

Both become the nccl-tests-shaped document the analyzer views read
(analyzer.py) and the flat smddp-bench `rows` the report and compare read:
one row per size, type, op, root and run placement, backend "nccl".
"""
import math
import re

from smddp_safeio import Int, List, Num, Obj, Opt, Shape, Str, UsageError, check_shape

MAX_RANKS = 1 << 20
BYTES = Int(0, 1 << 62)
MICROSECONDS = Num(0, 1e15)  # about 30 years
ROOT = re.compile(r"\s*-?\d{1,9}\s*")


class NumOrNan(Shape):
    """A number in range, or the string "nan": nccl-tests writes a NaN double so."""

    def __init__(self, shape):
        self.shape = shape

    def check(self, value):
        return None if value == "nan" else self.shape.check(value)


def _num(x):
    """A value NumOrNan accepted, as a float or None."""
    return None if x is None or x == "nan" else x


BODY = Obj({k + "?": Opt(NumOrNan(MICROSECONDS if k.endswith("time") else Num(0, 1e12)))
            for k in ("time", "cpu_time", "alg_bw", "bus_bw", "nwrong")})
PER_ITER = Obj({"skipped_iterations?": Int(0, 1 << 31), "times_us?": List(MICROSECONDS),
                "per_process_max_times_us?": List(List(MICROSECONDS), max_len=MAX_RANKS)}
               | {k + "?": Opt(NumOrNan(Num(0, 1e15))) for k in ("min_us", "max_us", "avg_us", "p50_us", "p95_us",
                                                              "p99_us", "stdev_us", "cv_pct")})
RESULT = Obj({"size": BYTES, "count?": BYTES, "type?": Str(64), "redop?": Str(64), "root?": Str(16),
              "out_of_place?": Opt(BODY), "in_place?": Opt(BODY), "out_of_place_per_iter?": PER_ITER,
              "in_place_per_iter?": PER_ITER, "actual_iterations?": Int(0, 1 << 62), "experiment_name?": Str(256),
              "collective?": Str(64)})
DEVICE = Obj({"rank?": Int(0, MAX_RANKS), "group?": Int(-1, MAX_RANKS), "pid?": Int(0, 1 << 40),
              "hostname?": Str(1024), "device?": Int(-1, 1 << 20)})
DOCUMENT = Obj({
    "results": List(RESULT), "version?": Int(0, 1 << 20), "args?": List(Str()), "start_time?": Str(64),
    "config?": Obj({"nthreads?": Int(1, 1 << 16), "ngpus?": Int(1, 1 << 16), "iterations?": Int(0, 1 << 40),
                    "per_iter_skip?": Int(0, 1 << 31), "devices?": List(DEVICE, max_len=MAX_RANKS)}),
})
PLACEMENTS = (("out_of_place", "out-of-place"), ("in_place", "in-place"))


def canonical_collective(name):
    """all_reduce_perf, AllReduce, all-reduce -> allreduce: the rule of
    smddp::results' canonical_collective (results/src/rows.cc)."""
    s = name.lower()
    if len(s) > 5 and s.endswith("_perf"):
        s = s[:-5]
    return s.replace("_", "").replace("-", "")


def program_of(args):
    """The *_perf program of argv[0], or ""."""
    if args and isinstance(args[0], str):
        name = args[0].rsplit("/", 1)[-1]
        return name if name.endswith("_perf") else ""
    return ""


def processes_per_rank_group(doc):
    """Ranks per process: nthreads x ngpus (each `devices` entry is a process)."""
    cfg = doc.get("config") or {}
    return max(1, cfg.get("nthreads", 1)) * max(1, cfg.get("ngpus", 1))


def check_results(path, doc, what):
    """Shapes of the nccl-tests part of a document; per-process rows must not be empty."""
    check_shape(doc, DOCUMENT, f"{path}: {what}")
    for i, r in enumerate(doc["results"]):
        for key, _ in PLACEMENTS:
            pi = r.get(key + "_per_iter") or {}
            for p, times in enumerate(pi.get("per_process_max_times_us", [])):
                if not times:
                    raise UsageError(f"{path}: {what}.results[{i}].{key}_per_iter.per_process_max_times_us[{p}]: "
                                     f"an empty list")
        if "root" in r and not ROOT.fullmatch(r["root"]):
            raise UsageError(f"{path}: {what}.results[{i}].root: '{r['root']}' is not a rank")


def _straggler(pi, hosts):
    """smddp-bench's straggler (bench/src/sweep/sweep.cc): the slowest
    rank's mean time, when over 1.10 x the upper median of the ranks' means."""
    per = pi.get("per_process_max_times_us") or []
    if len(per) < 2:
        return None
    means = [sum(t) / len(t) for t in per]
    median = sorted(means)[len(means) // 2]
    slowest = means.index(max(means))
    if median > 0 and means[slowest] > 1.10 * median:
        return {"rank": slowest, "host": hosts.get(slowest, ""), "slower_pct": (means[slowest] / median - 1) * 100}
    return None


def rows_of(doc, collective_default, nranks, hosts):
    """The flat smddp-bench rows of an nccl-tests-shaped document (its
    placements that ran with a time); `hosts` rank -> host name, for the
    straggler, when each process is one rank."""
    rows = []
    for r in doc["results"]:
        coll = canonical_collective(r.get("experiment_name") or r.get("collective") or collective_default)
        for key, placement in PLACEMENTS:
            body = r.get(key)
            if not isinstance(body, dict):
                continue  # not run
            time = _num(body.get("time", body.get("cpu_time")))
            if time is None:
                continue
            row = {"collective": coll, "dtype": r.get("type", ""), "op": r.get("redop", "none"),
                   "root": int(r.get("root", "-1")), "bytes": r["size"], "backend": "nccl", "algorithm": "",
                   "placement": placement, "time_us": time, "algbw_gbps": _num(body.get("alg_bw")),
                   "busbw_gbps": _num(body.get("bus_bw")), "wrong": _num(body.get("nwrong")), "nranks": nranks}
            if "count" in r:
                row["count"] = r["count"]
            if "actual_iterations" in r:
                row["iterations"] = r["actual_iterations"]
            pi = r.get(key + "_per_iter")
            if pi:
                skip = pi.get("skipped_iterations", 0)
                row["per_iteration"] = {"min_us": _num(pi.get("min_us")), "p50_us": _num(pi.get("p50_us")),
                                        "p95_us": _num(pi.get("p95_us")), "p99_us": _num(pi.get("p99_us")),
                                        "max_us": _num(pi.get("max_us")), "mean_us": _num(pi.get("avg_us")),
                                        "cv": None if _num(pi.get("cv_pct")) is None else pi["cv_pct"] / 100}
                if pi.get("times_us"):
                    row["per_iteration"]["samples_us"] = pi["times_us"][skip:]
                    row["iterations"] = len(pi["times_us"]) - skip
                s = _straggler(pi, hosts) if processes_per_rank_group(doc) == 1 else None
                if s:
                    row["straggler"] = s
            rows.append(row)
    return rows


def from_json(path, doc):
    """(bench data, nccl-tests-shaped document) of nccl-tests' -J document."""
    check_results(path, doc, "nccl-tests document")
    devices = (doc.get("config") or {}).get("devices", [])
    per = processes_per_rank_group(doc)
    nranks = len(devices) * per if devices else None
    hosts = {}
    for p, d in enumerate(devices):
        for k in range(per):
            hosts[p * per + k] = d.get("hostname", "")
    program = program_of(doc.get("args"))
    if not program and any(not (r.get("experiment_name") or r.get("collective")) for r in doc["results"]):
        raise UsageError(f"{path}: nccl-tests document: a result names no collective (experiment_name, or a *_perf "
                         f"program in args[0])")
    for r in doc["results"]:  # named as in our -J, for the views of a document of several
        if not (r.get("experiment_name") or r.get("collective")):
            r["collective"] = canonical_collective(program)
    rows = rows_of(doc, program, nranks, hosts)
    checked = per == 1 and any(len((r.get(k + "_per_iter") or {}).get("per_process_max_times_us") or []) > 1
                               for r in doc["results"] for k, _ in PLACEMENTS)
    data = {"tool": "nccl-tests", "format": f"nccl-tests JSON (version {doc.get('version', '?')})",
            "straggler_checked": checked,
            "rows": rows, "argv": doc.get("args", []), "started_utc": doc.get("start_time"),
            "options": {"backends": ["nccl"]}, "complete": "end_time" in doc,
            "ranks": [{"rank": k, "host": h} for k, h in sorted(hosts.items())]}
    if nranks:
        data["nranks"] = nranks
        data["nnodes"] = len({d.get("hostname") for d in devices})
    avg = doc.get("average_bus_bandwidth") or doc.get("average_bus_bandwidith")  # 2.18/2.19.0 spelled it so
    if isinstance(avg, dict):
        data["avg_busbw_gbps"] = _num(avg.get("bandwidth", avg.get("bandwidith")))
    return data, doc


# ---- the text log --------------------------------------------------------------

RANK_LINE = re.compile(r"#\s+Rank\s+(\d+)(?:\s+Group\s+(-?\d+))?\s+Pid\s+(\d+)\s+on\s+(\S+)\s+device\s+(-?\d+)"
                       r"(?:\s+\[([^\]]*)\])?\s*(.*)")
NTHREAD_LINE = re.compile(r"#\s*nThread\s+(\d+)\s+nGpus\s+(\d+)\s+minBytes\s+(\d+)\s+maxBytes\s+(\d+)(.*)")
ITERS = re.compile(r"(?<!agg )iters:\s*(\d+)")
SKIP = re.compile(r"summary skips first (\d+) iterations")
STARTING = re.compile(r"#\s*Collective test starting:\s*(\S+)")
FOOTER = re.compile(r"#?\s*(Out of bounds values|Avg bus bandwidth)\s*:\s*(\S+)")
ROW_START = re.compile(r"\s*\d+\s+\d+(\s|$)")
# Column names, any version: a placement's (time, algbw, busbw, #wrong or
# 2.0-2.11's error, and with -I 1 the per-iteration summary).
TIME_NAMES = ("time", "cputime")
PLACEMENT_NAMES = {"algbw": "alg_bw", "busbw": "bus_bw", "#wrong": "nwrong", "error": "error",
                   "i_min": "min_us", "i_max": "max_us", "i_p99": "p99_us", "i_cv%": "cv_pct"}
MAX_COLUMNS = 64
MAX_LINE = 64 * 1024


class _Section:
    def __init__(self, collective, names, line):
        self.collective, self.line = collective, line
        self.lead, self.placements, self.tail = [], [], []
        for name in names:  # size count type [redop] [root] | time ... | time ... | [timestamp, ours]
            if name in TIME_NAMES:
                self.placements.append([name])
            elif self.placements and name in PLACEMENT_NAMES and name not in self.placements[-1] and not self.tail:
                self.placements[-1].append(name)
            elif self.placements:
                self.tail.append(name)
            else:
                self.lead.append(name)
        self.width = len(names)
        self.stamped = "timestamp" in self.tail


def _header(tokens):
    """The column names of a header line (`# size count type ...`), or None."""
    return tokens if len(tokens) >= 3 and tokens[0] == "size" and tokens[1] == "count" else None


def _number(text, path, lineno, column, lo=0.0, hi=1e15):
    if text == "N/A":
        return None
    try:
        x = float(text)
    except ValueError:
        raise UsageError(f"{path} line {lineno}: {column} '{text[:32]}' is not a number") from None
    if not math.isfinite(x) or not lo <= x <= hi:
        raise UsageError(f"{path} line {lineno}: {column} {text[:32]} is not a finite number in {lo:g}..{hi:g}")
    return x


def _integer(text, path, lineno, column, lo, hi):
    if not re.fullmatch(r"-?\d{1,19}", text) or not lo <= int(text) <= hi:
        raise UsageError(f"{path} line {lineno}: {column} '{text[:32]}' is not a whole number {lo}..{hi}")
    return int(text)


def _row(sec, tokens, path, lineno):
    """One result object of a data row of section `sec`."""
    full = sec.width + (1 if sec.stamped else 0)  # a timestamp is a date and a time: one token more
    widths = [len(p) for p in sec.placements]
    nlead = len(sec.lead)
    skipped_first = widths and len(tokens) == full - widths[0]  # trace replay: out-of-place left blank
    if len(tokens) != full and not skipped_first:
        raise UsageError(f"{path} line {lineno}: a row of {len(tokens)} fields where the header (line {sec.line}) "
                         f"has {full} (a truncated log?)")
    lead = dict(zip(sec.lead, tokens[:nlead]))
    r = {"size": _integer(lead["size"], path, lineno, "size", 0, 1 << 62),
         "count": _integer(lead["count"], path, lineno, "count", 0, 1 << 62),
         "type": lead.get("type", ""), "redop": lead.get("redop", "none"), "collective": sec.collective}
    r["root"] = str(_integer(lead["root"], path, lineno, "root", -1, MAX_RANKS)) if "root" in lead else "-1"
    pos = nlead
    for i, names in enumerate(sec.placements[:2]):
        key = PLACEMENTS[i][0]
        if i == 0 and skipped_first:
            r[key] = None
            continue
        body, per_iter = {}, {}
        for name, text in zip(names, tokens[pos:pos + len(names)]):
            field = PLACEMENT_NAMES.get(name, "time")
            value = _number(text, path, lineno, f"{PLACEMENTS[i][1]} {name}", 0, 1e15)
            if field in ("min_us", "max_us", "p99_us", "cv_pct"):
                per_iter[field] = value
            elif field != "error":  # 2.0-2.11's max deviation: not a count of wrong values
                body[field] = value
        pos += len(names)
        r[key] = body if body.get("time") is not None else None
        if per_iter:
            r[key + "_per_iter"] = per_iter
    return r


def parse_text(path, text):
    """The nccl-tests-shaped document of a text log, or UsageError naming the line."""
    devices, results, sections, config = [], [], [], {}
    program, sec, footer = "", None, {}
    saw_header = False
    for lineno, line in enumerate(text.splitlines(), 1):
        if len(line) > MAX_LINE:
            raise UsageError(f"{path} line {lineno}: a line longer than {MAX_LINE} characters")
        stripped = line.strip()
        if stripped.startswith("#"):
            tokens = stripped[1:].split()
            m = STARTING.match(stripped)
            if m:
                program = m.group(1)
                continue
            m = RANK_LINE.match(stripped)
            if m:
                rank = _integer(m.group(1), path, lineno, "rank", 0, MAX_RANKS)
                devices.append({"rank": rank, "group": int(m.group(2) or 0), "pid": int(m.group(3)),
                                "hostname": m.group(4), "device": int(m.group(5)), "device_hex": m.group(6) or "",
                                "device_info": m.group(7).strip()})
                continue
            m = NTHREAD_LINE.match(stripped)
            if m:
                config.update(nthreads=int(m.group(1)), ngpus=int(m.group(2)), minimum_bytes=int(m.group(3)),
                              maximum_bytes=int(m.group(4)))
                it = ITERS.search(m.group(5))
                if it:
                    config["iterations"] = int(it.group(1))
                continue
            m = SKIP.search(stripped)
            if m:
                config["per_iter_skip"] = int(m.group(1))
            names = _header(tokens)
            if names:
                if len(names) > MAX_COLUMNS:
                    raise UsageError(f"{path} line {lineno}: a header of {len(names)} columns")
                if "size" not in names or not any(n in TIME_NAMES for n in names):
                    raise UsageError(f"{path} line {lineno}: a column header without a time column")
                sec = _Section(canonical_collective(program) if program else "", names, lineno)
                sections.append({"collective": sec.collective, "program": program, "line": lineno})
                saw_header = True
                continue
        m = FOOTER.match(stripped)
        if m and sections:
            field = "out_of_bounds" if m.group(1).startswith("Out") else "avg_busbw_gbps"
            value = _number(m.group(2), path, lineno, m.group(1), 0, 1e15)
            sections[-1][field] = value
            footer[field] = value
            continue
        if stripped.startswith("#") or not ROW_START.match(line):
            continue  # NCCL INFO lines, warnings, MPI's noise
        if sec is None:
            raise UsageError(f"{path} line {lineno}: a result row before any column header")
        if len(results) >= 1 << 20:
            raise UsageError(f"{path}: more than {1 << 20} result rows")
        results.append(_row(sec, line.split(), path, lineno))
    if not saw_header:
        raise UsageError(f"{path}: an nccl-tests log without its column header ('#  size  count  type ...'): "
                         f"cut short?")
    if not results:
        raise UsageError(f"{path}: an nccl-tests log without result rows (line {sections[0]['line']} is its header)")
    if devices:
        config["devices"] = devices
    return {"results": results, "config": config, "args": [program] if program else [], "sections": sections,
            "complete": "avg_busbw_gbps" in footer}


def from_text(path, text):
    """(bench data, nccl-tests-shaped document) of a text log. Its Rank
    lines are one per rank (the JSON's devices, one per process)."""
    doc = parse_text(path, text)
    devices = doc["config"].get("devices", [])
    hosts = {d["rank"]: d["hostname"] for d in devices}
    unnamed = [s for s in doc["sections"] if not s["collective"]]
    if unnamed:  # before 2.17 the log does not name its program: the file name may
        guess = re.search(r"(all_?reduce|all_?gather|reduce_?scatter|alltoallv?|broadcast|reduce|gather|scatter|"
                          r"sendrecv|hypercube)", path.rsplit("/", 1)[-1].lower())
        name = canonical_collective(guess.group(1)) if guess else "unknown"
        for r in doc["results"]:
            if not r["collective"]:
                r["collective"] = name
        for s in unnamed:
            s["collective"] = name
    # Ranks per process: the JSON's devices are one per process; here each
    # rank has its line, so the rank count is the line count.
    per = processes_per_rank_group(doc)
    nranks = len(devices) or None
    rows = rows_of(doc, "unknown", nranks, hosts if per == 1 else {})
    data = {"tool": "nccl-tests", "format": "nccl-tests log", "rows": rows, "argv": doc["args"],
            "straggler_checked": False,  # a log has no rank's times
            "options": {"backends": ["nccl"]}, "complete": doc["complete"],
            "ranks": [{"rank": d["rank"], "host": d["hostname"]} for d in devices]}
    if nranks:
        data["nranks"] = nranks
        data["nnodes"] = len({d["hostname"] for d in devices})
    avgs = [s["avg_busbw_gbps"] for s in doc["sections"] if s.get("avg_busbw_gbps") is not None]
    if avgs:
        data["avg_busbw_gbps"] = avgs[-1]
    # The analyzer groups processes by the devices of the JSON: one a process.
    by_pid = {}
    for d in devices:
        by_pid.setdefault((d["hostname"], d["pid"]), d)
    doc["config"]["devices"] = list(by_pid.values()) if devices else []
    doc["config"]["rank_lines"] = devices
    return data, doc


def looks_like_text_log(text):
    """Whether some line of the first 64 KiB or so is an nccl-tests column
    header or a line of its preamble (then a log cut short is named so)."""
    for line in text[:1 << 16].splitlines():
        s = line.strip()
        if s.startswith("#") and (_header(s[1:].split()) or NTHREAD_LINE.match(s) or STARTING.match(s) or
                                  RANK_LINE.match(s)):
            return True
    return False
