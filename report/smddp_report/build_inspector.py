"""NCCL Inspector output in the report (inspector.py reads it):

  JSON lines, per communicator: bus bandwidth and execution time against
  message size, one series per collective (the median operation, the p95
  dashed), each (collective, size) with its statistics in the table behind;
  a heatmap of ranks against (collective, size): each rank's mean time, how
  far over the median rank.
  Prometheus text, per communicator: each GPU's bus bandwidth (the plugin's
  geometric mean) and mean time per message-size bucket and algorithm.
"""
from . import inspector, svg
from .analyzer_text import size_text

MAX_RANK_ROWS = 512
METRIC_NOTES = {"busbw": "nccl_bus_bandwidth_gbs, the geometric mean of the bucket's operations",
                "exec_us": "nccl_collective_exec_time_microseconds, the mean of the bucket's operations"}


def _colours(keys, palette):
    return {k: palette[i % len(palette)] for i, k in enumerate(keys)}


def _comm_title(recs):
    r = recs[0]
    return (f"{r['comm_name']} ({r['comm']}, {r['nranks']} ranks" +
            (f" on {r['nnodes']} nodes" if r.get("nnodes") else "") + ")")


def _jsonl(page, table, palette, records, labels):
    by_comm = {}
    for key, recs in inspector.groups(records).items():
        by_comm.setdefault((key[0], key[1]), []).append((key, recs))
    page.heading(f"NCCL Inspector: operations per communicator ({', '.join(labels)})")
    for (comm, name), items in by_comm.items():
        title = _comm_title(items[0][1])
        stats = [(key, recs, inspector.group_stats(recs)) for key, recs in items]
        ops = list(dict.fromkeys((k[2], k[3]) for k, _, _ in stats))
        colour = _colours(ops, palette)
        log_x = all(k[4] > 0 for k, _, _ in stats)
        rows = [[k[3], k[2], k[4], s["records"], f"{s['ranks']} of {s['nranks']}", s["exec"]["min"], s["exec"]["p50"],
                 s["exec"]["mean"], s["exec"]["p95"], s["exec"]["max"], s["exec"]["cv"],
                 s["busbw_geomean"], s["busbw"]["p50"] if s["busbw"] else None,
                 s["busbw"]["min"] if s["busbw"] else None, s["busbw"]["max"] if s["busbw"] else None,
                 " ".join(s["timing"])] for k, _, s in stats]
        headers = ["operation", "kind", "size (B)", "records", "ranks", "min (us)", "p50 (us)", "mean (us)",
                   "p95 (us)", "max (us)", "cv", "busbw geomean (GB/s)", "busbw p50", "busbw min", "busbw max",
                   "timing"]
        bw = []
        for op in ops:
            pts = sorted([k[4], s["busbw"]["p50"]] for k, _, s in stats if (k[2], k[3]) == op and s["busbw"])
            if pts:
                bw.append({"label": f"{op[1]} ({op[0]}), p50", "points": pts, "colour": colour[op]})
        if bw:
            page.chart(f"{name}: bus bandwidth against message size", "message size (bytes" +
                       (", log scale)" if log_x else ")"), "bus bandwidth (GB/s)", bw,
                       table(headers, rows, "operations behind the plot"), x_type="log" if log_x else "category",
                       note=f"{title}: the median operation's busbw (Inspector's coll_busbw_gbs) over every rank's "
                            f"records; the table gives the plugin's Prometheus figure too (geometric mean)")
        times = []
        for op in ops:
            mine = sorted((k[4], s["exec"]) for k, _, s in stats if (k[2], k[3]) == op)
            times.append({"label": f"{op[1]} ({op[0]}), p50", "points": [[b, e["p50"]] for b, e in mine],
                          "colour": colour[op]})
            times.append({"label": f"{op[1]} ({op[0]}), p95", "points": [[b, e["p95"]] for b, e in mine],
                          "colour": colour[op], "dash": True})
        if all(p[1] > 0 for d in times for p in d["points"]):
            page.chart(f"{name}: execution time against message size", "message size (bytes" +
                       (", log scale)" if log_x else ")"), "time per operation (us, log scale)", times,
                       table(headers, rows, "operations behind the plot"), x_type="log" if log_x else "category",
                       y_type="log", note=f"{title}: coll_exec_time_us over every rank's records; solid the "
                                          f"median, dashed the 95th percentile (nearest rank)")
        _rank_heatmap(page, table, name, title, stats)


def _rank_heatmap(page, table, name, title, stats):
    cols = [(k, inspector.rank_means(recs)) for k, recs, _ in stats]
    ranks = sorted({rank for _, m in cols for rank in m})
    if len(ranks) < 2:
        return
    shown = ranks[:MAX_RANK_ROWS]
    hosts = {rank: host for _, m in cols for rank, (_, host) in m.items()}
    over, worst = {}, 0.0
    for j, (_, m) in enumerate(cols):
        ordered = sorted(v for v, _ in m.values())
        median = ordered[len(ordered) // 2]  # the upper median, as smddp-bench's straggler
        for rank, (v, _) in m.items():
            over[(rank, j)] = (v / median - 1) * 100 if median > 0 else 0.0
            worst = max(worst, over[(rank, j)])
    cells = [[(svg.heat_color(max(0.0, over[(rank, j)]), worst), f"{m[rank][0]:.0f}",
               f"rank {rank} {hosts[rank]}, {k[3]} {k[4]} B: mean {m[rank][0]:.1f} us, "
               f"{over[(rank, j)]:+.1f}% against the median rank") if rank in m else None
              for j, (k, m) in enumerate(cols)] for rank in shown]
    picture = svg.heatmap(f"{name}: each rank's mean time per operation and size", "operation and message size",
                          "rank", [f"{k[3]} {size_text(k[4])}" for k, _ in cols],
                          [f"r{rank} {hosts[rank]}".strip() for rank in shown], cells,
                          "cell: the rank's mean time (us); redder: slower than the median rank")
    detail = [[k[3], k[4], rank, hosts[rank], m[rank][0], over[(rank, j)]]
              for j, (k, m) in enumerate(cols) for rank in sorted(m)]
    page.heatmap(picture, sum(1 for row in cells for c in row if c is not None),
                 table(["operation", "size (B)", "rank", "host", "mean (us)", "against the median rank (%)"], detail,
                       "rank means behind the plot"),
                 note=f"{title}; {len(ranks)} ranks" + (f", the first {MAX_RANK_ROWS} shown"
                                                       if len(ranks) > MAX_RANK_ROWS else ""))


def _prom(page, table, palette, series, labels):
    page.heading(f"NCCL Inspector: Prometheus metrics ({', '.join(labels)})")
    by_comm = {}
    for s in series:
        by_comm.setdefault((s["comm_name"], s["nranks"], s["n_nodes"]), []).append(s)
    for (name, nranks, nnodes), items in by_comm.items():
        keys = list(dict.fromkeys((s["op"], s["algo_proto"], s["node"], s["gpu"]) for s in items))
        colour = _colours(keys, palette)
        rows = [[s["node"], s["gpu"], s["kind"], s["op"], s["message_size"], s["bytes"], s["algo_proto"],
                 s.get("busbw"), s.get("exec_us")] for s in items]
        headers = ["node", "gpu", "kind", "operation", "message size", "bucket from (B)", "algorithm_protocol",
                   "busbw (GB/s)", "exec (us)"]
        for field, what, unit, y_type in (("busbw", "bus bandwidth", "GB/s", "linear"),
                                          ("exec_us", "execution time", "us, log scale", "log")):
            ds = []
            for key in keys:
                pts = sorted([s["bytes"], s[field]] for s in items if (s["op"], s["algo_proto"], s["node"], s["gpu"])
                             == key and s["bytes"] and s.get(field) is not None and (s[field] > 0 or y_type != "log"))
                if pts:
                    op, algo, node, gpu = key
                    ds.append({"label": f"{op} {algo} {node}/{gpu}".replace("  ", " "), "points": pts,
                               "colour": colour[key], "dash": key[1] == ""})
            if ds:
                page.chart(f"{name}: {what} per message-size bucket", "message size bucket (bytes from, log scale)",
                           f"{what} ({unit})", ds, table(headers, rows, "metrics behind the plot"), y_type=y_type,
                           note=f"{name}, {nranks} ranks on {nnodes} nodes, per GPU: {METRIC_NOTES[field]}; "
                                f"P2P from nccl_p2p_*")


def add(page, table, palette, docs):
    jsonl = [d for d in docs if d.kind == "inspector" and d.data["format"] == "jsonl"]
    prom = [d for d in docs if d.kind == "inspector" and d.data["format"] == "prom"]
    if jsonl:  # the files of one job (one a process) together
        _jsonl(page, table, palette, [r for d in jsonl for r in d.data["records"]], [d.label for d in jsonl])
    if prom:
        _prom(page, table, palette, [s for d in prom for s in d.data["series"]], [d.label for d in prom])
