"""The analyzer views (analyzer.py) in the report: per results file with
per-process times, a heatmap of processes against sizes and the straggler,
spike, iteration-0 and node tables, the numbers `smddp-report analyze`
prints; for an nccl-tests log, its nodes from the Rank lines."""
from . import analyzer, svg
from .analyzer_text import size_text

MAX_PROCESS_ROWS = 512


def _groups(results):
    """Results by what distinguishes them beside the size, in order."""
    out = {}
    for r in results:
        lab = analyzer._label(r)
        out.setdefault((lab["collective"], lab["type"], lab["redop"], lab["root"]), []).append(r)
    return out


def _name(key):
    coll, typ, redop, root = key
    return " ".join(x for x in (coll, typ, redop if redop not in ("", "none") else "",
                                f"root {root}" if root not in ("", "-1") else "") if x)


def _process_heatmap(page, table, doc, key, placement, gkey, results):
    rows = [(r["size"], analyzer._process_times(analyzer._per_iter(r, key))) for r in results]
    rows = [(size, pt) for size, pt in rows if pt]
    if not rows:
        return
    nprocs = max(len(pt) for _, pt in rows)
    shown = list(range(min(nprocs, MAX_PROCESS_ROWS)))
    devices = (doc.nccl.get("config") or {}).get("devices") or []
    hosts = {p: d.get("hostname", "") for p, d in enumerate(devices)}
    means = {size: [sum(t) / len(t) for t in pt] for size, pt in rows}
    slower, worst = {}, 0.0
    for size, m in means.items():
        fastest = min(m)
        for p, v in enumerate(m):
            slower[(p, size)] = (v / fastest - 1) * 100 if fastest > 0 else 0.0
            worst = max(worst, slower[(p, size)])
    cells = [[(svg.heat_color(slower[(p, size)], worst), f"{means[size][p]:.1f}",
               f"process {p} {hosts.get(p, '')} at {size} B: mean {means[size][p]:.2f} us, "
               f"{slower[(p, size)]:.1f}% over the fastest process") if p < len(means[size]) else None
              for size, _ in rows] for p in shown]
    title = f"{_name(gkey)}: each process's mean time per size, {placement} ({doc.label})"
    picture = svg.heatmap(title, "message size (bytes)", "process", [size_text(s) for s, _ in rows],
                          [f"p{p} {hosts.get(p, '')}".strip() for p in shown], cells,
                          "cell: the process's mean time (us) over its iterations; redder: slower than the "
                          "size's fastest process")
    detail = [[size, p, hosts.get(p, ""), means[size][p], min(pt[p]), max(pt[p]), slower[(p, size)]]
              for size, pt in rows for p in range(len(pt))]
    page.heatmap(picture, sum(1 for row in cells for c in row if c is not None),
                 table(["size (B)", "process", "host", "mean (us)", "min (us)", "max (us)", "over fastest (%)"],
                       detail, "process times behind the plot"),
                 note=f"{nprocs} processes" + (f", the first {MAX_PROCESS_ROWS} shown" if nprocs > MAX_PROCESS_ROWS
                                               else "") + " (nccl-tests' per_process_max_times_us)")


def _tables(page, table, out, placement):
    page.html(table(["size (B)", "fastest", "mean (us)", "slowest", "mean (us)", "spread (us)", "spread (%)",
                     "noisiest", "cv (%)", "worst iteration", "time (us)"],
                    [[e["size"], e["fastest"], e["fastest_us"], e["slowest"], e["slowest_us"], e["spread_us"],
                      e["spread_pct"], e["noisiest"], e["noisiest_cv_pct"], e["worst_max"], e["worst_max_us"]]
                     for e in out["straggler"]],
                    f"stragglers, {placement}: processes by their mean time (the analyzer's --straggler sizes)"))
    page.html(table(["size (B)", "avg (us)", "max (us)", "iteration", "processes spiked", "slowest (us)", "kind",
                     "which"],
                    [[e["size"], e["avg_us"], e["max_us"], it["iteration"], f"{it['spiked']} of {out['processes']}",
                      it["max_us"], it["kind"], " ".join(map(str, it["processes"] or []))]
                     for e in out["spikes"] for it in e["iterations"]],
                    f"spikes, {placement}: iterations over {out['threshold']:g} x the average"))
    page.html(table(["size (B)", "iteration 0 (us)", "rest: mean (us)", "ratio", "cv (%)", "cv without it (%)"],
                    [[e["size"], e["iter0_us"], e["steady_avg_us"], e["ratio"], e["cv_pct"], e["steady_cv_pct"]]
                     for e in out["iter0"]], f"iteration 0 against the rest, {placement}"))
    page.html(table(["size (B)", "node", "host", "processes", "mean (us)", "range (us)", "max (us)", "noisiest",
                     "cv (%)"],
                    [[e["size"], n["node"], n["host"], f"{n['processes'][0]}-{n['processes'][-1]}", n["avg_us"],
                      f"{n['min_avg_us']:.1f}-{n['max_avg_us']:.1f}", n["max_us"], n["noisiest"],
                      n["noisiest_cv_pct"]] for e in out["nodes"] for n in e["nodes"]],
                    f"nodes, {placement}: processes grouped by host (the analyzer's --nodes sizes)"))


def _rank_lines(page, table, doc):
    lines = (doc.nccl.get("config") or {}).get("rank_lines") or []
    if not lines:
        return
    by_host = {}
    for d in lines:
        by_host.setdefault(d["hostname"], []).append(d)
    page.html(table(["host", "ranks", "processes", "devices", "device names"],
                    [[h, " ".join(str(d["rank"]) for d in ds), len({d["pid"] for d in ds}),
                      " ".join(str(d["device"]) for d in ds), ", ".join(sorted({d["device_info"] for d in ds}))]
                     for h, ds in by_host.items()],
                    f"nodes of {doc.label}: {len(by_host)} hosts, {len(lines)} ranks (the log's Rank lines)"))


def add(page, table, bench_docs):
    for doc in bench_docs:
        if doc.nccl is None:
            continue
        placements = [(ip, name) for ip, name in ((False, "out-of-place"), (True, "in-place"))
                      if analyzer.nprocs_of(doc.nccl, analyzer.placement_key(ip))]
        if not placements:  # no per-process times (a log, or one process): the nodes it names
            if (doc.nccl.get("config") or {}).get("rank_lines"):
                page.heading(f"nodes ({doc.label}, {doc.source})")
                _rank_lines(page, table, doc)
            continue
        page.heading(f"per-process views, as nccl-tests' analyzer ({doc.label}, {doc.source})")
        for ip, name in placements:
            key = analyzer.placement_key(ip)
            for gkey, results in _groups(doc.nccl["results"]).items():
                _process_heatmap(page, table, doc, key, name, gkey, results)
            _tables(page, table, analyzer.analyze(doc.nccl, in_place=ip), name)
