"""nccl-tests' own outputs, read as smddp-report reads smddp-bench's:

  * the -J/--output_file JSON (nccl-tests 2.18 and 2.19: `version` 1 to 3;
    `config` with one `devices` entry per process, `results` per size with
    `out_of_place`/`in_place` bodies and, with -I 1, their `*_per_iter`
    objects), and the same part of smddp-bench's -J, which writes it too;
  * the text log (stdout) of nccl-tests 2.0 onwards, read by its column
    header, so every version's columns are found by name (docs/report.md).

Both become the nccl-tests-shaped document the analyzer views read
(analyzer.py) and the flat smddp-bench `rows` the report and compare read:
one row per size, type, op, root and run placement, backend "nccl". This
module reads the JSON and makes the rows; nccl_log.py reads the log.
"""
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
    # 2.18 and 2.19.0 spelled it average_bus_bandwidith / bandwidith
    "average_bus_bandwidth?": Obj({"bandwidth?": Opt(NumOrNan(Num(0, 1e15)))}),
    "average_bus_bandwidith?": Obj({"bandwidith?": Opt(NumOrNan(Num(0, 1e15)))}),
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
