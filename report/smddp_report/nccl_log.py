"""nccl-tests' text log (stdout), nccl-tests 2.0 onwards, read by its column
header: every version's columns are found by name (docs/report.md, "Other
tools' outputs"). The result is the document nccl_tests.py makes rows of."""
import math
import re

from smddp_safeio import UsageError

from .nccl_tests import MAX_RANKS, PLACEMENTS, canonical_collective, processes_per_rank_group, rows_of

# Counts are bounded in the patterns: no int() of a 5000-digit field.
RANK_LINE = re.compile(r"#\s+Rank\s+(\d{1,9})(?:\s+Group\s+(-?\d{1,9}))?\s+Pid\s+(\d{1,12})\s+on\s+(\S{1,1024})\s+"
                       r"device\s+(-?\d{1,9})(?:\s+\[([^\]]*)\])?\s*(.*)")
NTHREAD_LINE = re.compile(r"#\s*nThread\s+(\d{1,6})\s+nGpus\s+(\d{1,6})\s+minBytes\s+(\d{1,19})\s+maxBytes\s+"
                          r"(\d{1,19})(.*)")
ITERS = re.compile(r"(?<!agg )iters:\s*(\d{1,12})")
SKIP = re.compile(r"summary skips first (\d{1,12}) iterations")
STARTING = re.compile(r"#\s*Collective test starting:\s*(\S{1,256})")
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
