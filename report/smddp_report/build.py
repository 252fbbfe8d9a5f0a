"""Builds the report: one self-contained HTML file (Chart.js and the page's
script inlined, data as embedded JSON, a Content-Security-Policy that lets
the page load nothing) from bench, diag and model documents."""
import datetime
import json
import os
from html import escape

from smddp_safeio import finite_json, read_text

from . import UsageError, build_inspector, build_views, svg
from .inputs import backends_of, per_iteration, row_nranks

CHARTJS_CANDIDATES = ("/usr/share/javascript/chart.js/chart.umd.js", "/usr/share/javascript/chart.js/chart.min.js",
                      "/usr/share/javascript/chart.js/Chart.min.js")
PALETTE = ("#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#7f7f7f",
           "#bcbd22")
HERE = os.path.dirname(os.path.abspath(__file__))
MAX_RANK_ROWS = 512


def find_chartjs(explicit):
    path = explicit or os.environ.get("SMDDP_REPORT_CHARTJS")
    if path:
        if not os.path.isfile(path):
            raise UsageError(f"chart library {path} not found")
        return path
    for p in CHARTJS_CANDIDATES:
        if os.path.isfile(p):
            return p
    raise UsageError("Chart.js not found in /usr/share/javascript/chart.js/ (apt-get install libjs-chart.js, or "
                     "--chartjs FILE / SMDDP_REPORT_CHARTJS=FILE)")


def human_bytes(n):
    for unit, size in (("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
        if n >= size and n % size == 0:
            return f"{n // size}{unit}"
    return str(n)


def fmt(x, digits=2):
    if x is None:
        return "-"
    if isinstance(x, float):
        return f"{x:.{digits}f}" if abs(x) < 1e5 else f"{x:.0f}"
    return str(x)


def table(headers, rows, caption):
    out = [f'<details class="data"><summary>{escape(caption)} ({len(rows)} rows)</summary><table><thead><tr>']
    out += [f"<th>{escape(h)}</th>" for h in headers]
    out.append("</tr></thead><tbody>")
    for r in rows:
        out.append("<tr>" + "".join(f"<td>{escape(fmt(c))}</td>" for c in r) + "</tr>")
    out.append("</tbody></table></details>")
    return "".join(out)


class Page:
    def __init__(self):
        self.sections, self.charts, self.plots = [], {}, 0

    def chart(self, title, x_title, y_title, datasets, table_html, x_type="log", y_type="linear", note=""):
        """datasets: dicts of label, points [[x, y]], colour, and optional
        dash, reference (drawn, not counted), fill (fill to the dataset before)."""
        cid = f"chart{len(self.charts)}"
        expected = sum(len(d["points"]) for d in datasets if not d.get("reference"))
        self.charts[cid] = {"title": title, "x": x_title, "y": y_title, "xType": x_type, "yType": y_type,
                            "datasets": datasets}
        self.plots += 1
        self.sections.append(f'<figure class="plot" data-chart="{cid}" data-expected="{expected}">'
                             f'<div class="canvas-box"><canvas id="{cid}" aria-label="{escape(title)}"></canvas></div>'
                             f'<figcaption>{escape(note)}</figcaption>{table_html}</figure>')

    def heatmap(self, svg_text, cells, table_html, note=""):
        self.plots += 1
        self.sections.append(f'<figure class="plot" data-svg="1" data-expected="{cells}"><div class="svg-box">'
                             f'{svg_text}</div><figcaption>{escape(note)}</figcaption>{table_html}</figure>')

    def heading(self, text, level=2):
        self.sections.append(f"<h{level}>{escape(text)}</h{level}>")

    def html(self, raw):
        self.sections.append(raw)


# ---- smddp-bench results -------------------------------------------------

def _series_key(doc, row):
    return (doc.label, row["backend"], row.get("algorithm", ""), row.get("placement", "out-of-place"))


def _series_label(key, many_runs):
    run, backend, algo, placement = key
    return (f"{run}: " if many_runs else "") + (f"{backend}/{algo}" if algo else backend) + f" {placement}"


def _groups(bench_docs):
    groups = {}
    for doc in bench_docs:
        for row in doc.data["rows"]:
            g = (row["collective"], row.get("dtype", ""), row.get("op", "none"))
            groups.setdefault(g, []).append((doc, row))
    return groups


def _colours(items):
    keys = []
    for doc, row in items:
        k = _series_key(doc, row)
        if k not in keys:
            keys.append(k)
    return {k: PALETTE[i % len(PALETTE)] for i, k in enumerate(keys)}


def _series(items, value, many_runs, colours):
    series = {}
    for doc, row in items:
        v = value(doc, row)
        if v is None:
            continue
        k = _series_key(doc, row)
        series.setdefault(k, []).append([row["bytes"], v])
    out = []
    for k, pts in series.items():
        out.append({"label": _series_label(k, many_runs), "points": sorted(pts), "colour": colours[k],
                    "dash": k[3] == "in-place"})
    return out


def _bench_group(page, group, items, many_runs):
    coll, dtype, op = group
    name = " ".join([coll, dtype] + ([op] if op != "none" else []))
    page.heading(name)
    colours = _colours(items)
    sizes = sorted({row["bytes"] for _, row in items})
    x_type = "log" if sizes and sizes[0] > 0 else "category"  # barrier rows have size 0
    size_title = "message size (bytes, log scale)" if x_type == "log" else "message size (bytes)"
    run_col = ["run"] if many_runs else []

    def run_cell(doc):
        return [doc.label] if many_runs else []

    # Bus bandwidth (barrier moves no data: its busbw is 0 by definition).
    if any((row.get("busbw_gbps") or 0) > 0 for _, row in items):  # null: a log's N/A
        ds = _series(items, lambda d, r: r.get("busbw_gbps"), many_runs, colours)
        for doc in dict.fromkeys(d for d, _ in items):
            bw = doc.data.get("host_memory_bandwidth_gbps")
            if isinstance(bw, (int, float)) and bw > 0:
                ds.append({"label": (f"{doc.label}: " if many_runs else "") + f"roofline: host copy {bw:.2f} GB/s",
                           "points": [[sizes[0], bw], [sizes[-1], bw]], "colour": "#444444", "dash": True,
                           "reference": True})
        rows = [run_cell(d) + [r["bytes"], r["backend"], r.get("algorithm"), r.get("placement"), r["time_us"],
                               r.get("algbw_gbps"), r.get("busbw_gbps"), r.get("roof_fraction"), r.get("wrong")]
                for d, r in items]
        page.chart(f"{name}: bus bandwidth against size", size_title, "bus bandwidth (GB/s)", ds,
                   table(run_col + ["size (B)", "backend", "algorithm", "placement", "time (us)", "algbw (GB/s)",
                                    "busbw (GB/s)", "roof (fraction)", "#wrong"], rows, "table behind the plot"),
                   x_type=x_type, note="busbw = algbw x the collective's factor (docs/bench.md); the dashed grey line "
                   "is the host copy bandwidth measured by --roofline" if any(d.get("reference") for d in ds) else
                   "busbw = algbw x the collective's factor (docs/bench.md)")

    # Ratio against the first backend of each run (smddp-bench's ratio column).
    firsts = {d.label: backends_of(d)[0] for d, _ in items}
    others = [(d, r) for d, r in items if r["backend"] != firsts[d.label] and isinstance(r.get("ratio"), (int, float))]
    if others:
        ds = _series(others, lambda d, r: r["ratio"], many_runs, colours)
        ds.append({"label": "1 = as fast as the first backend", "points": [[sizes[0], 1], [sizes[-1], 1]],
                   "colour": "#444444", "dash": True, "reference": True})
        rows = [run_cell(d) + [r["bytes"], firsts[d.label], r["backend"], r.get("algorithm"), r.get("placement"),
                               r["ratio"]] for d, r in others]
        page.chart(f"{name}: ratio against the first backend", size_title,
                   "ratio to the first backend (x)", ds,
                   table(run_col + ["size (B)", "first backend", "backend", "algorithm", "placement", "ratio"], rows,
                         "table behind the plot"), x_type=x_type,
                   note="smddp-bench's ratio column: the first backend's busbw over this backend's (barrier: this "
                   "backend's time over the first's); above 1, the first backend was that many times faster")

    # p50 and p99 bands from --per-iteration.
    with_pi = [(d, r) for d, r in items if per_iteration(r) and isinstance(per_iteration(r).get("p50_us"), (int, float))]
    if with_pi:
        p50 = _series(with_pi, lambda d, r: per_iteration(r)["p50_us"], many_runs, colours)
        p99 = _series(with_pi, lambda d, r: per_iteration(r).get("p99_us") or per_iteration(r)["p50_us"], many_runs,
                      colours)
        ds = []
        for a, b in zip(p50, p99):  # same rows in the same order: the series pair up
            ds += [dict(a, label=a["label"] + " p50", dash=False),
                   dict(b, label=b["label"] + " p99", dash=True, fill=True)]
        rows = []
        for d, r in with_pi:
            pi = per_iteration(r)
            rows.append(run_cell(d) + [r["bytes"], r["backend"], r.get("algorithm"), r.get("placement"),
                                       r.get("iterations"), pi.get("min_us"), pi.get("p50_us"), pi.get("p95_us"),
                                       pi.get("p99_us"), pi.get("max_us"), pi.get("cv")])
        page.chart(f"{name}: time per call, p50 to p99 band", size_title, "time per call (us, log scale)", ds,
                   table(run_col + ["size (B)", "backend", "algorithm", "placement", "iterations", "min (us)",
                                    "p50 (us)", "p95 (us)", "p99 (us)", "max (us)", "cv"], rows,
                         "table behind the plot"), x_type=x_type, y_type="log",
                   note="solid: median call; dashed and shaded up to it: 99th percentile (of the slowest rank per call)")

    # Stragglers: ranks against sizes, per run.
    for doc in dict.fromkeys(d for d, _ in items):
        mine = [r for d, r in items if d is doc]
        nranks = row_nranks(doc, mine[0]) or 0
        if nranks < 2 or not doc.data.get("straggler_checked", True):  # nccl-tests: only from per-process times
            continue
        run_sizes = sorted({r["bytes"] for r in mine})
        worst = {}
        for r in mine:
            s = r.get("straggler")
            if isinstance(s, dict) and isinstance(s.get("rank"), int) and isinstance(s.get("slower_pct"), (int, float)):
                k = (s["rank"], r["bytes"])
                worst[k] = max(worst.get(k, 0), s["slower_pct"])
        vmax = max(worst.values(), default=0)
        # Every rank a row of the picture up to a few hundred; past that, the stragglers' ranks only.
        shown = range(nranks) if nranks <= MAX_RANK_ROWS else sorted({k for k, _ in worst})
        hosts = {x.get("rank"): x.get("host", "") for x in doc.data.get("ranks", []) if isinstance(x, dict)}
        cells = [[(svg.heat_color(worst.get((rank, b), 0), vmax),
                   f"{worst[(rank, b)]:.0f}%" if (rank, b) in worst else "",
                   f"rank {rank} at {b} B: " + (f"{worst[(rank, b)]:.1f}% slower than the median rank"
                                                if (rank, b) in worst else "not a straggler"))
                  for b in run_sizes] for rank in shown]
        title = f"{name}: stragglers, ranks against sizes" + (f" ({doc.label})" if many_runs else "")
        picture = svg.heatmap(title, "message size (bytes)", "rank", [human_bytes(b) for b in run_sizes],
                              [f"r{k} {hosts.get(k, '')}".strip() for k in shown], cells,
                              "cell: % slower than the median rank (worst backend/placement); blank: under 10%")
        rows = [[r["bytes"], r["backend"], r.get("algorithm"), r.get("placement"), r["straggler"].get("rank"),
                 r["straggler"].get("host"), r["straggler"].get("slower_pct")]
                for r in mine if isinstance(r.get("straggler"), dict)]
        page.heatmap(picture, len(shown) * len(run_sizes),
                     table(["size (B)", "backend", "algorithm", "placement", "rank", "host", "slower (%)"], rows,
                           "stragglers behind the plot"),
                     note=f"{len(rows)} rows with a rank more than 10% slower than the median rank")


def _runs_table(docs):
    rows = []
    for d in docs:
        x = d.data
        if d.kind == "bench":
            detail = (f"{x.get('nranks')} ranks on {x.get('nnodes')} nodes, backends {', '.join(backends_of(d))}, "
                      f"memory {(x.get('devices') or {}).get('memory', '-')}, {len(x['rows'])} rows"
                      + (f", average busbw {x['avg_busbw_gbps']:g} GB/s" if x.get("avg_busbw_gbps") is not None
                         else "")
                      + ("" if x.get("complete", True) else ", INCOMPLETE (the run ended early)"))
            when = x.get("started_utc")
        elif d.kind == "inspector":
            if x["format"] == "jsonl":
                recs = x["records"]
                detail = (f"{len(recs)} operations, {len({r['comm'] for r in recs})} communicators, "
                          f"{len({(r['comm'], r['rank']) for r in recs})} ranks, hosts "
                          f"{', '.join(sorted({r['host'] for r in recs}))}")
            else:
                detail = (f"{len(x['series'])} series, {len({s['comm_name'] for s in x['series']})} communicators, "
                          f"GPUs {', '.join(sorted({s['node'] + '/' + s['gpu'] for s in x['series']}))}")
            when = None
        elif d.kind == "fabric":
            pp = x.get("pingpong") or {}
            detail = f"provider {x.get('provider')}, " + (f"{pp.get('ranks')} ranks, {len(pp.get('links', []))} links"
                                                         if pp else "no link matrix (run it under mpirun)")
            when = None
        elif d.kind == "verdicts":
            detail = f"profile {x.get('profile', '-')}, {len(x['nodes'])} nodes, healthy {x.get('healthy', '-')}"
            when = x.get("timestamp_ms")
            when = datetime.datetime.fromtimestamp(when / 1000, datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ") \
                if isinstance(when, (int, float)) else None
        else:
            detail = f"{len(x['rows'])} predictions"
            when = None
        tool = d.source if d.source != d.kind else x.get("tool", d.kind)
        rows.append([d.label, tool, when, detail, " ".join(map(str, x.get("argv", [])))])
    return table(["input", "tool", "started (UTC)", "what", "command"], rows, "inputs")


# ---- smddp-model: predicted against measured ------------------------------

MODEL_MATCH = ("dtype", "op", "backend", "algorithm", "placement")


def _measured(bench_docs, pred):
    """Mean time_us of the bench rows matching every key the prediction names."""
    times = []
    for doc in bench_docs:
        for r in doc.data["rows"]:
            if r["collective"] != pred["collective"] or r["bytes"] != pred["bytes"]:
                continue
            if any(k in pred and r.get(k) != pred[k] for k in MODEL_MATCH):
                continue
            if "nranks" in pred and row_nranks(doc, r) != pred["nranks"]:
                continue
            times.append(r["time_us"])
    if times:
        return sum(times) / len(times), len(times)
    m = pred.get("measured_us")
    return (m, 0) if isinstance(m, (int, float)) else (None, 0)


def _model(page, doc, bench_docs):
    page.heading(f"model: predicted against measured ({doc.label})")
    by_coll = {}
    for p in doc.data["rows"]:
        by_coll.setdefault(p["collective"], []).append(p)
    for coll, preds in by_coll.items():
        pred_pts, meas_pts, rows = [], [], []
        for p in sorted(preds, key=lambda p: p["bytes"]):
            measured, n = _measured(bench_docs, p)
            if p["bytes"] > 0 and p["predicted_us"] > 0:
                pred_pts.append([p["bytes"], p["predicted_us"]])
                if measured and measured > 0:
                    meas_pts.append([p["bytes"], measured])
            err = (p["predicted_us"] - measured) / measured * 100 if measured else None
            rows.append([p["bytes"], p.get("backend", "-"), p.get("algorithm", "-"), p["predicted_us"], measured,
                         err, n if n else ("in model file" if measured is not None else "none")])
        ds = [{"label": "predicted", "points": pred_pts, "colour": PALETTE[4], "dash": True},
              {"label": "measured (smddp-bench time_us)", "points": meas_pts, "colour": PALETTE[0]}]
        page.chart(f"{coll}: predicted against measured time", "message size (bytes, log scale)",
                   "time per call (us, log scale)", ds,
                   table(["size (B)", "backend", "algorithm", "predicted (us)", "measured (us)", "error (%)",
                          "measured rows"], rows, "table behind the plot"), y_type="log",
                   note="measured: the mean time_us of the matching smddp-bench rows in this report")


# ---- smddp-diag ------------------------------------------------------------

def _fabric(page, doc):
    pp = doc.data.get("pingpong")
    page.heading(f"fabric link matrix ({doc.label})")
    if not pp:
        page.html("<p>No link matrix in this file: smddp-diag fabric measures links only under mpirun.</p>")
        return
    n = pp["ranks"]
    hosts = pp.get("hosts") or []
    names = [f"r{k} {hosts[k] if k < len(hosts) else ''}".strip() for k in range(n)]
    flagged = {(f.get("a"), f.get("b")): f.get("reason", "") for f in pp.get("flagged", []) if isinstance(f, dict)}
    links = {}
    for link in pp["links"]:
        links[(link["a"], link["b"])] = links[(link["b"], link["a"])] = link
    provider = pp.get("provider") or {}
    provider_name = provider.get("provider", doc.data.get("provider", "")) if isinstance(provider, dict) else provider
    for field, what, unit, scheme in (("latency_us", "latency", "us", "heat"),
                                      ("bandwidth_gbs", "bandwidth", "GB/s", "cool")):
        vals = [l[field] for l in pp["links"] if isinstance(l.get(field), (int, float))]
        vmax = max(vals, default=0)
        cells, count = [], 0
        for a in range(n):
            row = []
            for b in range(n):
                link = links.get((a, b))
                if a == b or not link or not isinstance(link.get(field), (int, float)):
                    row.append(None)
                    continue
                mark = (a, b) in flagged or (b, a) in flagged
                v = link[field]
                row.append((svg.heat_color(v, vmax, scheme), f"{v:.1f}" + ("*" if mark else ""),
                            f"r{a} <-> r{b}: {v:.3f} {unit}" + (f" FLAGGED: {flagged.get((a, b)) or flagged.get((b, a))}"
                                                               if mark else "")))
                count += 1
            cells.append(row)
        title = f"link {what} ({unit}) between ranks, {provider_name}"
        picture = svg.heatmap(title, "rank (peer)", "rank", [f"r{k}" for k in range(n)], names, cells,
                              f"cell: {what} in {unit}; * flagged; hatched: not measured")
        rows = [[l["a"], l["b"], hosts[l["a"]] if l["a"] < len(hosts) else "", hosts[l["b"]] if l["b"] < len(hosts)
                 else "", l.get(field), flagged.get((l["a"], l["b"]), "")] for l in pp["links"]]
        page.heatmap(picture, count, table(["a", "b", "host a", "host b", f"{what} ({unit})", "flagged"], rows,
                                           "links behind the plot"),
                     note=f"{len(pp['links'])} links, {len(flagged)} flagged" +
                     (" (sampled rounds, not every pair)" if pp.get("sampled") else ""))


STATUS_COLOURS = {"pass": "#7fc97f", "fail": "#e34a33", "skip": "#d9d9d9"}


def _node_verdict(node):
    if isinstance(node.get("verdict"), str):
        return node["verdict"]
    if node.get("healthy"):
        return "Healthy"
    failed = [f"{c.get('name')}: {c.get('reason', '')}" for c in node.get("checks", [])
              if isinstance(c, dict) and c.get("status") == "fail"]
    return "ERROR: " + "; ".join(failed) if failed else "ERROR"


def _verdicts(page, doc):
    x = doc.data
    tool = x.get("tool", "smddp-diag")
    page.heading(f"{tool}: verdicts per node ({doc.label})")
    nodes = x["nodes"]
    checks = []
    for node in nodes:
        for c in node.get("checks", []) or []:
            if isinstance(c, dict) and c.get("name") not in checks:
                checks.append(c.get("name"))
    labels = [str(n.get("label") or n.get("host")) for n in nodes]
    cells, count = [], 0
    for node in nodes:
        status = {c.get("name"): c for c in node.get("checks", []) or [] if isinstance(c, dict)}
        verdict_ok = node.get("healthy") if isinstance(node.get("healthy"), bool) else \
            str(node.get("verdict", "")).lower().startswith("healthy")
        row = [(STATUS_COLOURS["pass" if verdict_ok else "fail"], "Healthy" if verdict_ok else "ERROR",
                f"{node.get('host')}: {_node_verdict(node)}")]
        count += 1
        for name in checks:
            c = status.get(name)
            if c is None:
                row.append(None)
                continue
            st = c.get("status", "pass" if c.get("healthy", True) else "fail")
            row.append((STATUS_COLOURS.get(st, "#ffffff"), st, f"{name}: {st}: {c.get('reason', '')}"))
            count += 1
        cells.append(row)
    picture = svg.heatmap(f"{tool}: checks per node" + (f", profile {x['profile']}" if x.get("profile") else ""),
                          "check", "node", ["verdict"] + checks, labels, cells,
                          "green pass, red fail, grey skipped (skips never make a node unhealthy)")
    rows = [[n.get("host"), n.get("label"), " ".join(map(str, n.get("ranks", []))), _node_verdict(n)] for n in nodes]
    page.heatmap(picture, count, table(["host", "label", "ranks", "verdict"], rows, "verdicts behind the plot"),
                 note=f"{sum(1 for n in nodes if n.get('healthy') is True)} of {len(nodes)} nodes healthy")


# ---- the page --------------------------------------------------------------

def _asset(name):
    with open(os.path.join(HERE, name), encoding="utf-8") as f:
        return f.read()


def _script_safe(text):
    # Inside <script>, only "</script" (any case) can end the element early.
    return text.replace("</script", "<\\/script").replace("</SCRIPT", "<\\/SCRIPT")


def build(docs, chartjs_path, title):
    page = Page()
    bench = [d for d in docs if d.kind == "bench"]
    page.html(_runs_table(docs))
    many = len(bench) > 1
    for group, items in _groups(bench).items():
        _bench_group(page, group, items, many)
    build_views.add(page, table, bench)
    build_inspector.add(page, table, PALETTE, docs)
    for d in docs:
        if d.kind == "model":
            _model(page, d, bench)
    for d in docs:
        if d.kind == "fabric":
            _fabric(page, d)
    for d in docs:
        if d.kind == "verdicts":
            _verdicts(page, d)
    chartjs = read_text(chartjs_path, "chart library")
    data = json.dumps(finite_json({"charts": page.charts}), separators=(",", ":"), allow_nan=False).replace("</", "<\\/")
    generated = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    return f"""<!DOCTYPE html>
<html lang="en" data-status="loading">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{escape(title)}</title>
<script>{_script_safe(_asset("errors.js"))}</script>
<style>{_asset("page.css")}</style>
</head>
<body>
<header><h1>{escape(title)}</h1><p class="meta">generated {generated} by smddp-report from {len(docs)} input(s); {page.plots} plots; works offline</p></header>
<pre id="report-errors" hidden></pre>
<main>
{chr(10).join(page.sections)}
</main>
<script type="application/json" id="report-data">{data}</script>
<script>/* Chart.js from {escape(os.path.basename(chartjs_path))} (libjs-chart.js), inlined */
{_script_safe(chartjs)}</script>
<script>{_script_safe(_asset("page.js"))}</script>
</body>
</html>
"""
