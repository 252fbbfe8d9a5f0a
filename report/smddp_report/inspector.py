"""NCCL's Inspector profiler plugin (plugins/profiler/inspector in NCCL),
its two outputs:

  * JSON lines (the default): one object a line per completed collective or
    P2P operation of a communicator on a rank: `header` (id, comm_name,
    rank, n_ranks, nnodes), `metadata` (hostname, pid, dump_timestamp_us,
    inspector_output_format_version, ...), and `coll_perf` (coll, coll_sn,
    coll_msg_size_bytes, coll_exec_time_us, coll_timing_source,
    coll_algobw_gbs, coll_busbw_gbs) or `p2p_perf` (p2p, p2p_sn, p2p_peer,
    p2p_msg_size_bytes, ...); doubles NaN are the string "nan";
  * Prometheus text (NCCL_INSPECTOR_PROM_DUMP=1): per GPU, per communicator,
    collective, message-size bucket and algorithm_protocol,
    nccl_bus_bandwidth_gbs (the geometric mean of the operations' busbw)
    and nccl_collective_exec_time_microseconds (their mean), and the P2P
    pair nccl_p2p_bus_bandwidth_gbs / nccl_p2p_exec_time_microseconds.

Both are read into plain records; build_inspector.py draws them.
"""
import math
import re
import statistics

from smddp_safeio import Int, Num, Obj, Opt, Shape, Str, UsageError, check_shape, parse_json

from .stats import bench_rank

MAX_RECORDS = 1 << 20
MAX_RANKS = 1 << 20


class NumOrNan(Shape):
    def check(self, value):
        return None if value == "nan" else Num(0, 1e15).check(value)


HEADER = Obj({"id": Str(64), "comm_name?": Str(256), "rank": Int(0, MAX_RANKS), "n_ranks": Int(1, MAX_RANKS),
              "nnodes?": Int(1, MAX_RANKS)})
METADATA = Obj({"hostname?": Str(256), "pid?": Int(0, 1 << 40), "dump_timestamp_us?": Int(0, 1 << 62),
                "inspector_output_format_version?": Str(32)})


def _perf(prefix):
    return Obj({prefix: Str(64), f"{prefix}_sn?": Int(0, 1 << 62), f"{prefix}_msg_size_bytes": Int(0, 1 << 62),
                f"{prefix}_exec_time_us": Num(0, 1e15), f"{prefix}_timing_source?": Str(64),
                f"{prefix}_algobw_gbs?": Opt(NumOrNan()), f"{prefix}_busbw_gbs?": Opt(NumOrNan())}
               | ({"p2p_peer?": Int(-1, MAX_RANKS)} if prefix == "p2p" else {}))


RECORD = Obj({"header": HEADER, "metadata?": METADATA, "coll_perf?": _perf("coll"), "p2p_perf?": _perf("p2p")})


def is_record(value):
    return isinstance(value, dict) and isinstance(value.get("header"), dict) and \
        ("coll_perf" in value or "p2p_perf" in value)


def parse_jsonl(path, text):
    """The operations of an Inspector JSON-lines file, each a flat dict."""
    records = []
    for lineno, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        if len(records) >= MAX_RECORDS:
            raise UsageError(f"{path}: more than {MAX_RECORDS} Inspector records")
        where = f"{path} line {lineno}"
        value = parse_json(line, where)
        if not is_record(value):
            raise UsageError(f"{where}: not an Inspector record (expected 'header' and 'coll_perf' or 'p2p_perf')")
        check_shape(value, RECORD, f"{where}: record")
        h, m = value["header"], value.get("metadata") or {}
        kind = "coll" if "coll_perf" in value else "p2p"
        perf = value[f"{kind}_perf"]

        def num(k):
            v = perf.get(f"{kind}_{k}")
            return None if v in (None, "nan") else v
        records.append({"kind": kind, "comm": h["id"], "comm_name": h.get("comm_name", "unknown"),
                        "rank": h["rank"], "nranks": h["n_ranks"], "nnodes": h.get("nnodes"),
                        "host": m.get("hostname", ""), "pid": m.get("pid"), "op": perf[kind],
                        "sn": perf.get(f"{kind}_sn"), "bytes": perf[f"{kind}_msg_size_bytes"],
                        "exec_us": perf[f"{kind}_exec_time_us"], "timing": perf.get(f"{kind}_timing_source", ""),
                        "algbw": num("algobw_gbs"), "busbw": num("busbw_gbs"), "peer": perf.get("p2p_peer"),
                        "line": lineno})
    if not records:
        raise UsageError(f"{path}: no Inspector records")
    return records


# ---- Prometheus text ----------------------------------------------------------

METRICS = {"nccl_bus_bandwidth_gbs": ("coll", "busbw"), "nccl_collective_exec_time_microseconds": ("coll", "exec_us"),
           "nccl_p2p_bus_bandwidth_gbs": ("p2p", "busbw"), "nccl_p2p_exec_time_microseconds": ("p2p", "exec_us")}
SAMPLE = re.compile(r"([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)(?:\s+(-?\d+))?\s*")
LABEL = re.compile(r'\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*=\s*"((?:[^"\\]|\\.)*)"\s*(,|$)')
KEY_LABELS = ("node", "gpu", "comm_name", "n_nodes", "nranks", "message_size", "algo_proto")
BUCKET = re.compile(r"(\d+)-(\d+)(B|KB|MB|GB|TB)")
UNITS = {"B": 1, "KB": 1 << 10, "MB": 1 << 20, "GB": 1 << 30, "TB": 1 << 40}
MAX_SAMPLES = 1 << 18


def _labels(text, where):
    out, pos = {}, 0
    while pos < len(text):
        m = LABEL.match(text, pos)
        if not m or m.end() == pos:
            raise UsageError(f"{where}: labels not of the form name=\"value\",... (at '{text[pos:pos + 24]}')")
        out[m.group(1)] = re.sub(r"\\(.)", lambda e: "\n" if e.group(1) == "n" else e.group(1), m.group(2))
        pos = m.end()
    return out


def bucket_bytes(label):
    """The lower bound in bytes of the plugin's message-size bucket ("4-5MB": 4 MiB), or None."""
    m = BUCKET.fullmatch(label)
    return int(m.group(1)) * UNITS[m.group(3)] if m else None


def parse_prom(path, text):
    """The Inspector metrics of a Prometheus text file, one entry per
    label set: {kind, labels..., busbw, exec_us}. Other metrics are ignored."""
    series, seen = {}, 0
    for lineno, line in enumerate(text.splitlines(), 1):
        s = line.strip()
        if not s or s.startswith("#"):
            continue
        where = f"{path} line {lineno}"
        m = SAMPLE.fullmatch(s)
        if not m:
            raise UsageError(f"{where}: not a Prometheus sample (name{{labels}} value)")
        if m.group(1) not in METRICS:
            continue
        seen += 1
        if seen > MAX_SAMPLES:
            raise UsageError(f"{path}: more than {MAX_SAMPLES} Inspector samples")
        kind, field = METRICS[m.group(1)]
        labels = _labels(m.group(2) or "", where)
        op = labels.get("collective" if kind == "coll" else "p2p_operation")
        if not op:
            raise UsageError(f"{where}: {m.group(1)} without its '{'collective' if kind == 'coll' else 'p2p_operation'}' "
                             f"label")
        try:
            value = float(m.group(3))
        except ValueError:
            raise UsageError(f"{where}: '{m.group(3)[:32]}' is not a number") from None
        if not math.isfinite(value) or not 0 <= value <= 1e15:
            raise UsageError(f"{where}: {m.group(1)} {m.group(3)[:32]} is not a finite number in 0..1e+15")
        for k in ("n_nodes", "nranks"):
            if k in labels and not re.fullmatch(r"\d{1,7}", labels[k]):
                raise UsageError(f"{where}: label {k}=\"{labels[k][:32]}\" is not a count")
        key = (kind, op) + tuple(labels.get(k, "") for k in KEY_LABELS)
        entry = series.setdefault(key, dict({k: labels.get(k, "") for k in KEY_LABELS}, kind=kind, op=op,
                                            version=labels.get("version", ""), job=labels.get("slurm_job_id", ""),
                                            bytes=bucket_bytes(labels.get("message_size", "")), line=lineno))
        entry[field] = value
    if not series:
        raise UsageError(f"{path}: no NCCL Inspector metric (nccl_bus_bandwidth_gbs, "
                         f"nccl_collective_exec_time_microseconds, nccl_p2p_*)")
    return list(series.values())


def looks_like_prom(text):
    return any(line.split("{", 1)[0].strip() in METRICS for line in text[:1 << 16].splitlines()
               if line and not line.startswith("#"))


# ---- statistics of the JSON-lines records ----------------------------------------

def percentile(sorted_values, frac):
    """smddp-bench's percentile (stats.bench_rank): p50 the upper median, others nearest-rank."""
    return sorted_values[bench_rank(frac, len(sorted_values)) - 1]


def summarize(values):
    s = sorted(values)
    if not s:
        return None
    mean = sum(s) / len(s)
    return {"n": len(s), "min": s[0], "p50": percentile(s, 0.5), "p95": percentile(s, 0.95), "max": s[-1],
            "mean": mean, "cv": statistics.pstdev(s) / mean if mean > 0 else None}


def geomean(values):
    """The plugin's Prometheus figure: exp(mean(log x)) of the values above 0."""
    pos = [v for v in values if v and v > 0]
    return math.exp(sum(math.log(v) for v in pos) / len(pos)) if pos else None


def groups(records):
    """{(comm, comm_name, kind, op, bytes): [records]} in first-seen order."""
    out = {}
    for r in records:
        out.setdefault((r["comm"], r["comm_name"], r["kind"], r["op"], r["bytes"]), []).append(r)
    return out


def group_stats(recs):
    exec_s = summarize([r["exec_us"] for r in recs])
    bus = [r["busbw"] for r in recs if r["busbw"] is not None]
    return {"records": len(recs), "ranks": len({r["rank"] for r in recs}), "nranks": recs[0]["nranks"],
            "hosts": sorted({r["host"] for r in recs}), "exec": exec_s, "busbw": summarize(bus),
            "busbw_geomean": geomean(bus), "timing": sorted({r["timing"] for r in recs if r["timing"]})}


def rank_means(recs):
    """{rank: (mean exec_us, host)} of one group's records."""
    by = {}
    for r in recs:
        by.setdefault(r["rank"], []).append(r)
    return {k: (sum(x["exec_us"] for x in v) / len(v), v[0]["host"]) for k, v in sorted(by.items())}
