"""Reads the JSON documents smddp-report accepts and says plainly what a file
is not. Unknown keys are ignored, so newer writers (the torch companion,
later smddp-bench versions) keep working.

Kinds:
  bench     smddp-bench -J (tool "smddp-bench...", rows of per-placement objects)
  fabric    smddp-diag fabric --json (a "pingpong" link matrix under mpirun)
  verdicts  smddp-diag preflight / isolate --json (per-node "nodes" verdicts)
  model     smddp-model predictions (tool "smddp-model", rows with "predicted_us")
"""
import json
import os

from . import UsageError

BENCH_REQUIRED = {"collective": str, "bytes": int, "backend": str, "time_us": (int, float)}


class Doc:
    def __init__(self, path, kind, data):
        self.path, self.kind, self.data = path, kind, data
        self.label = os.path.splitext(os.path.basename(path))[0]


def _number(x):
    return isinstance(x, (int, float)) and not isinstance(x, bool)


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


def _check_bench(path, data):
    for i, row in enumerate(data["rows"]):
        if not isinstance(row, dict):
            raise UsageError(f"{path}: rows[{i}] is not an object")
        for key, typ in BENCH_REQUIRED.items():
            value = row.get(key)
            if not isinstance(value, typ) or isinstance(value, bool):
                raise UsageError(f"{path}: rows[{i}] has no valid '{key}' (a smddp-bench results row needs "
                                 f"{', '.join(BENCH_REQUIRED)})")
        pi = row.get("per_iteration")
        if pi is not None and not isinstance(pi, dict):
            raise UsageError(f"{path}: rows[{i}].per_iteration is not an object")


def _check_model(path, data):
    rows = data.get("rows")
    if not isinstance(rows, list):
        raise UsageError(f"{path}: smddp-model document without a 'rows' list")
    for i, row in enumerate(rows):
        if not (isinstance(row, dict) and isinstance(row.get("collective"), str) and isinstance(row.get("bytes"), int)
                and _number(row.get("predicted_us"))):
            raise UsageError(f"{path}: rows[{i}] needs 'collective', 'bytes' and a number 'predicted_us'")


def _check_verdicts(path, data):
    for i, node in enumerate(data["nodes"]):
        if not isinstance(node, dict) or not isinstance(node.get("host", node.get("label")), str):
            raise UsageError(f"{path}: nodes[{i}] has no 'host'")
        if not isinstance(node.get("healthy"), bool) and not isinstance(node.get("verdict"), str):
            raise UsageError(f"{path}: nodes[{i}] has neither 'healthy' nor 'verdict'")


def _check_fabric(path, data):
    pp = data.get("pingpong")
    if pp is None:
        return
    if not isinstance(pp.get("ranks"), int) or not isinstance(pp.get("links"), list):
        raise UsageError(f"{path}: pingpong needs 'ranks' and 'links'")
    for i, link in enumerate(pp["links"]):
        if not (isinstance(link, dict) and isinstance(link.get("a"), int) and isinstance(link.get("b"), int)):
            raise UsageError(f"{path}: pingpong.links[{i}] needs ranks 'a' and 'b'")


def load(path):
    """Returns a Doc; raises UsageError (exit 64) with one line saying why not."""
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except OSError as e:
        raise UsageError(f"{path}: {e.strerror}") from None
    except UnicodeDecodeError:
        raise UsageError(f"{path}: not a results document (not UTF-8 text)") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        raise UsageError(f"{path}: not a results document (not JSON: line {e.lineno}: {e.msg})") from None
    kind = _kind(data)
    if kind is None:
        raise UsageError(f"{path}: not a results document (expected smddp-bench -J, smddp-diag fabric/preflight/"
                         f"isolate --json or smddp-model JSON)")
    {"bench": _check_bench, "model": _check_model, "verdicts": _check_verdicts, "fabric": _check_fabric}[kind](path, data)
    return Doc(path, kind, data)


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
