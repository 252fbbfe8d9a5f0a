"""The analyzer views (analyzer.py) as text, for `smddp-report analyze`."""


def size_text(n):
    for unit, step in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= step:
            v = n / step
            return f"{v:.0f} {unit}" if v == int(v) else f"{v:.1f} {unit}"
    return f"{n} B"


def _f(x, digits=1):
    return "-" if x is None else f"{x:.{digits}f}"


def _what(e, many):
    """The size, and the collective, type and op where the document holds several."""
    extra = " ".join(v for v in (e["collective"], e["type"], e["redop"] if e["redop"] != "none" else "") if v)
    return f"{size_text(e['size'])}" + (f" ({extra})" if many and extra else "")


def render(path, out, views):
    many = len({(e["collective"], e["type"], e["redop"], e["root"]) for v in views for e in out.get(v, [])}) > 1
    place = out["placement"]
    lines = [f"# {path}: {out['results']} results, {out['processes']} process rows ({place})"]
    c = out["consistency"]
    lines.append("# times_us is the max over process rows: " +
                 ("n/a (no process rows)" if not c["checked"] else
                  "yes" if not c["mismatches"] else f"NO in {c['mismatches']} of {c['checked']} results"))
    if "stats" in views:
        lines += ["", f"per-iteration statistics ({place}); * cv over 5% or max over 1.5 x avg",
                  f"{'size':>12} {'avg_us':>10} {'min_us':>10} {'max_us':>10} {'p99_us':>10} {'cv%':>7} {'spike':>6}"]
        for e in out["stats"]:
            lines.append(f"{_what(e, many):>12} {_f(e['avg_us']):>10} {_f(e['min_us']):>10} {_f(e['max_us']):>10} "
                         f"{_f(e['p99_us']):>10} {_f(e['cv_pct']):>7} {_f(e['spike']):>5}x" + (" *" if e["flagged"] else ""))
        if not out["stats"]:
            lines.append("no per-iteration data (nccl-tests -I 1, smddp-bench --per-iteration)")
    if "straggler" in views:
        lines += ["", f"stragglers: each process's mean time per size ({place})"]
        for e in out["straggler"]:
            lines.append(f"{_what(e, many):>12}: fastest process {e['fastest']} ({_f(e['fastest_us'])} us), slowest "
                         f"process {e['slowest']} ({_f(e['slowest_us'])} us), spread {_f(e['spread_us'])} us "
                         f"({_f(e['spread_pct'])}%); noisiest process {e['noisiest']} (cv {_f(e['noisiest_cv_pct'])}%), "
                         f"worst iteration: process {e['worst_max']} ({_f(e['worst_max_us'])} us)")
        if not out["straggler"]:
            lines.append("no per-process data (nccl-tests -J with -I 1 and several processes)")
    if "spikes" in views:
        lines += ["", f"spikes: iterations over {out['threshold']:g} x avg ({place})"]
        for e in out["spikes"]:
            lines.append(f"{_what(e, many)} (avg {_f(e['avg_us'])} us, max {_f(e['max_us'])} us, cv "
                         f"{_f(e['cv_pct'])}%):")
            for it in e["iterations"]:
                if it["kind"] == "system-wide":
                    who = "  SYSTEM-WIDE"
                elif it["processes"]:
                    who = (f"  STRAGGLER process {it['processes'][0]}" if it["kind"] == "straggler" else
                           f"  processes {', '.join(map(str, it['processes']))}")
                else:
                    who = ""
                lines.append(f"  iteration {it['iteration']}: {it['spiked']} of {out['processes']} processes spiked, "
                             f"max {_f(it['max_us'])} us{who}")
        if not out["spikes"]:
            lines.append(f"no iteration over {out['threshold']:g} x avg" if out["processes"] else
                         "no per-process data (nccl-tests -J with -I 1 and several processes)")
    if "iter0" in views:
        lines += ["", f"iteration 0 against the rest ({place}); * over 1.5 x",
                  f"{'size':>12} {'iter0_us':>10} {'rest_avg':>10} {'ratio':>6} {'cv%':>7} {'cv%-0':>7}"]
        for e in out["iter0"]:
            lines.append(f"{_what(e, many):>12} {_f(e['iter0_us']):>10} {_f(e['steady_avg_us']):>10} "
                         f"{_f(e['ratio']):>5}x {_f(e['cv_pct']):>7} {_f(e['steady_cv_pct']):>7}" +
                         (" *" if e["flagged"] else ""))
        if not out["iter0"]:
            lines.append("no per-iteration times (nccl-tests -J with -I 1)")
    if "nodes" in views:
        groups, ranks = out["node_groups"], out.get("rank_lines")
        if groups or not ranks:
            lines += ["", f"nodes: {len(groups)} ({place})"]
        for g in groups:
            lines.append(f"  {g['host']}: processes {', '.join(map(str, g['processes']))}")
        for e in out["nodes"]:
            lines.append(f"{_what(e, many)}:")
            for n in e["nodes"]:
                lines.append(f"  node {n['node']} ({n['host']}, processes {n['processes'][0]}-{n['processes'][-1]}): "
                             f"avg {_f(n['avg_us'])} us, range {_f(n['min_avg_us'])}-{_f(n['max_avg_us'])}, max "
                             f"{_f(n['max_us'])}, noisiest process {n['noisiest']} (cv {_f(n['noisiest_cv_pct'])}%)")
        if ranks:  # a log: its Rank lines, one a rank
            by_host = {}
            for d in ranks:
                by_host.setdefault(d["hostname"], []).append(d)
            lines += ["", f"nodes: {len(by_host)}, from the log's Rank lines"]
            for host, ds in by_host.items():
                lines.append(f"  {host}: ranks {', '.join(str(d['rank']) for d in ds)} "
                             f"(processes: {len({d['pid'] for d in ds})}; devices "
                             f"{', '.join(str(d['device']) for d in ds)})")
        if not out["nodes"]:
            lines.append("no per-process times to compare nodes by (nccl-tests -J with -I 1 and several processes)")
    return "\n".join(lines) + "\n"
