"""Reads the JSON documents smddp-report accepts and says plainly what a file
is not. Unknown keys are ignored, so newer writers (the torch companion,
later smddp-bench versions) keep working.

Kinds:
  bench     smddp-bench -J (tool "smddp-bench...", rows of per-placement objects)
  fabric    smddp-diag fabric --json (a "pingpong" link matrix under mpirun)
  verdicts  smddp-diag preflight / isolate --json (per-node "nodes" verdicts)
  model     smddp-model predictions (tool "smddp-model", rows with "predicted_us")
  inspector NCCL Inspector output: JSON lines, or Prometheus text (inspector.py)

nccl-tests' -J JSON and its text logs are read as bench documents (their
rows converted by nccl_tests.py); the format is found from the content.
"""
import os

from smddp_safeio import (Anything, Int, List, Num, Obj, Opt, Str, UsageError, check_shape, parse_json,
                          read_text)

from . import inspector, nccl_log, nccl_tests

# The keys and types the report and compare read; others are ignored, so
# newer writers keep working. Bounds keep every picture and table finite.
MAX_RANKS = 1 << 20
MAX_MATRIX_RANKS = 1024  # a link matrix is ranks x ranks cells
BYTES = Int(0, 1 << 62)
MICROSECONDS = Num(0, 1e15)  # about 30 years

BENCH_ROW = Obj({
    "collective": Str(64), "bytes": BYTES, "backend": Str(64), "time_us": MICROSECONDS,
    "dtype?": Str(64), "op?": Str(64), "root?": Int(-1, MAX_RANKS), "algorithm?": Opt(Str(128)),
    "placement?": Str(64), "nranks?": Int(1, MAX_RANKS), "iterations?": Int(0, 1 << 62),
    "busbw_gbps?": Opt(Num(0)), "algbw_gbps?": Opt(Num(0)), "ratio?": Opt(Num(0)), "roof_fraction?": Opt(Num()),
    "wrong?": Opt(Num()),
    "per_iteration?": Opt(Obj({k + "?": Opt(MICROSECONDS) for k in ("min_us", "p50_us", "p95_us", "p99_us", "max_us")}
                              | {"cv?": Opt(Num()), "samples_us?": List(MICROSECONDS)})),
    "straggler?": Opt(Obj({"rank?": Int(0, MAX_RANKS), "host?": Str(), "slower_pct?": Num(-1e6, 1e12)})),
})
BENCH = Obj({
    "rows": List(BENCH_ROW), "tool?": Str(), "nranks?": Int(1, MAX_RANKS), "nnodes?": Int(1, MAX_RANKS),
    "devices?": Opt(Obj({})), "argv?": List(Anything()), "ranks?": List(Obj({"rank?": Int(0, MAX_RANKS), "host?": Str()})),
    "options?": Obj({"backends?": List(Anything())}), "host_memory_bandwidth_gbps?": Opt(Num(0)),
})
MODEL = Obj({
    "rows": List(Obj({"collective": Str(64), "bytes": BYTES, "predicted_us": Num(), "measured_us?": Opt(Num()),
                      "nranks?": Int(1, MAX_RANKS), "backend?": Str(64), "algorithm?": Opt(Str(128)),
                      "dtype?": Str(64), "op?": Str(64), "placement?": Str(64)})),
    "argv?": List(Anything()),
})
CHECK = Obj({"name": Str(), "status?": Str(64), "reason?": Anything()})
VERDICTS = Obj({
    "nodes": List(Obj({"host?": Str(), "label?": Str(), "checks?": Opt(List(CHECK)), "ranks?": List(Anything())})),
    "profile?": Opt(Str()), "timestamp_ms?": Opt(Num(0, 1e14)), "argv?": List(Anything()),
})
LINK = Obj({"a": Int(0, MAX_MATRIX_RANKS - 1), "b": Int(0, MAX_MATRIX_RANKS - 1),
            "latency_us?": Opt(Num()), "bandwidth_gbs?": Opt(Num())})
FABRIC = Obj({
    "pingpong?": Opt(Obj({"ranks": Int(0, MAX_MATRIX_RANKS), "links": List(LINK), "hosts?": List(Str()),
                          "flagged?": List(Obj({"a?": Int(), "b?": Int(), "reason?": Str()}))})),
    "argv?": List(Anything()),
})
SHAPES = {"bench": BENCH, "model": MODEL, "verdicts": VERDICTS, "fabric": FABRIC}


class Doc:
    """kind: bench, fabric, verdicts, model or inspector; source: the format
    read; nccl: the nccl-tests-shaped part (results, config) the analyzer
    views read, or None."""

    def __init__(self, path, kind, data, source=None, nccl=None):
        self.path, self.kind, self.data = path, kind, data
        self.source, self.nccl = source or kind, nccl
        self.label = os.path.splitext(os.path.basename(path))[0]


def _kind(data):
    if not isinstance(data, dict):
        return None
    tool = data.get("tool") if isinstance(data.get("tool"), str) else ""
    rows = data.get("rows")
    if tool == "smddp-model" or (isinstance(rows, list) and rows and isinstance(rows[0], dict)
                                 and "predicted_us" in rows[0]):
        return "model"
    if isinstance(rows, list) and (tool.startswith("smddp-bench") or
                                   (rows and isinstance(rows[0], dict) and "busbw_gbps" in rows[0])):
        return "bench"
    if tool.startswith("smddp-diag") and isinstance(data.get("nodes"), list):
        return "verdicts"
    if isinstance(data.get("pingpong"), dict) or ("providers" in data and "rdma_devices" in data):
        return "fabric"
    return None


def _check_verdicts(path, data):
    for i, node in enumerate(data["nodes"]):
        if not isinstance(node.get("host", node.get("label")), str):
            raise UsageError(f"{path}: nodes[{i}] has no 'host'")
        if not isinstance(node.get("healthy"), bool) and not isinstance(node.get("verdict"), str):
            raise UsageError(f"{path}: nodes[{i}] has neither 'healthy' nor 'verdict'")


def _check_fabric(path, data):
    pp = data.get("pingpong")
    for i, link in enumerate(pp["links"] if pp else []):
        if max(link["a"], link["b"]) >= pp["ranks"]:
            raise UsageError(f"{path}: pingpong.links[{i}]: rank {max(link['a'], link['b'])} of a matrix of "
                             f"{pp['ranks']} ranks")


EXPECTED = ("expected smddp-bench -J, nccl-tests -J JSON or its log, NCCL Inspector JSON lines or Prometheus text, "
            "smddp-diag fabric/preflight/isolate --json or smddp-model JSON")


def _first_line_record(text):
    """Whether the first non-empty line is an Inspector record (then the file is JSON lines)."""
    first = next((line for line in text.splitlines() if line.strip()), "")
    try:
        return inspector.is_record(parse_json(first, "line"))
    except UsageError:
        return False


def _load_json(path, text):
    try:
        data = parse_json(text, f"results {path}")
    except UsageError:
        if _first_line_record(text):
            return Doc(path, "inspector", {"format": "jsonl", "records": inspector.parse_jsonl(path, text)},
                       "NCCL Inspector JSON lines")
        raise
    if inspector.is_record(data):
        return Doc(path, "inspector", {"format": "jsonl", "records": inspector.parse_jsonl(path, text)},
                   "NCCL Inspector JSON lines")
    kind = _kind(data)
    if kind is None and isinstance(data, dict) and isinstance(data.get("results"), list):
        bench, nccl = nccl_tests.from_json(path, data)
        check_shape(bench, BENCH, f"{path}: nccl-tests document")
        return Doc(path, "bench", bench, bench["format"], nccl)
    if kind is None:
        raise UsageError(f"{path}: not a results document ({EXPECTED})")
    check_shape(data, SHAPES[kind], f"{path}: {kind} document")
    {"verdicts": _check_verdicts, "fabric": _check_fabric}.get(kind, lambda p, d: None)(path, data)
    nccl = None
    if kind == "bench" and isinstance(data.get("results"), list):  # smddp-bench writes nccl-tests' part too
        nccl_tests.check_results(path, data, "bench document")
        nccl = data
    return Doc(path, kind, data, "smddp-bench JSON" if kind == "bench" else None, nccl)


def load(path):
    """Returns a Doc; raises UsageError (exit 64) with one line saying why not.
    The format is found from the content: JSON (ours, nccl-tests', an
    Inspector record a line), Prometheus text, or an nccl-tests log."""
    text = read_text(path, "results")
    if text.lstrip()[:1] in ("{", "["):
        return _load_json(path, text)
    if inspector.looks_like_prom(text):
        return Doc(path, "inspector", {"format": "prom", "series": inspector.parse_prom(path, text)},
                   "NCCL Inspector Prometheus text")
    if nccl_log.looks_like_text_log(text):
        bench, nccl = nccl_log.from_text(path, text)
        check_shape(bench, BENCH, f"{path}: nccl-tests log")
        return Doc(path, "bench", bench, bench["format"], nccl)
    raise UsageError(f"{path}: not a results document ({EXPECTED})")


def label_docs(docs):
    """Unique short labels: the file name, or the path where names repeat."""
    names = [d.label for d in docs]
    for d in docs:
        if names.count(d.label) > 1:
            d.label = d.path
    return docs


# Normalized views of a bench row, with smddp-bench's defaults for absent keys.
def row_nranks(doc, row):
    n = row.get("nranks", doc.data.get("nranks"))
    return n if isinstance(n, int) else None


def backends_of(doc):
    """The run's backends in order; the first is the one ratios refer to."""
    opts = doc.data.get("options")
    listed = opts.get("backends") if isinstance(opts, dict) else None
    order = [b for b in listed if isinstance(b, str)] if isinstance(listed, list) else []
    for row in doc.data["rows"]:
        if row["backend"] not in order:
            order.append(row["backend"])
    return order


def per_iteration(row):
    pi = row.get("per_iteration")
    return pi if isinstance(pi, dict) else None
