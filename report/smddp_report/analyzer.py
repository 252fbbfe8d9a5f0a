"""The views of nccl-tests 2.19's tools/analyze_perf_json.py, computed the
same way on the same keys (our own code; docs/report.md, "Analyzer views"):
`results[].{out_of_place,in_place}_per_iter` with `avg_us`, `min_us`,
`max_us`, `p99_us`, `cv_pct`, `times_us` (each iteration's slowest process)
and `per_process_max_times_us` (each process's times; with more than one
process), and `config.devices[].hostname` (one entry per process).

  stats      per size: avg, i_min, i_max, p99, cv%, spike = max / avg;
             flagged when cv% > 5 or spike > 1.5
  straggler  per size: each process's mean over its iterations; the fastest
             and slowest process (sorted by mean), spread = slowest - fastest
             (and in % of the fastest), the noisiest process (highest
             cv% = sample stdev / mean), the process with the worst i_max
  spikes     per size whose max_us / avg_us >= threshold: the iterations
             where some process took more than threshold x avg_us; how many,
             the slowest of all processes at it, system-wide (all) or one
             straggler; the processes named when fewer than all and at most 8
  iter0      per size: times_us[0] against the mean of the rest, the ratio
             (flagged above 1.5), cv% with and without iteration 0
  nodes      processes grouped by hostname (else procs_per_node in a row);
             per size and node: mean and range of the processes' means, the
             slowest iteration, the noisiest process
  consistency  times_us is the per-iteration max over process rows

Sizes: stats, spikes and iter0 take every size unless `sizes` are given;
straggler and nodes take the analyzer's defaults (0, 8, 1K, 128K, 8M, 128M,
1G, 32G where present, else all). The number of processes is that of the
first result, as the analyzer counts it. Where the analyzer would divide
by zero, the value here is None.
"""
import statistics

PROCESS_TIMES = "per_process_max_times_us"
DEFAULT_SIZES = (0, 8, 1024, 131072, 8388608, 134217728, 1073741824, 34359738368)
VIEWS = ("stats", "straggler", "spikes", "iter0", "nodes")


def placement_key(in_place):
    return "in_place_per_iter" if in_place else "out_of_place_per_iter"


def _per_iter(r, key):
    pi = r.get(key)
    return pi if isinstance(pi, dict) else {}


def _process_times(pi):
    return pi.get(PROCESS_TIMES) or []


def default_sizes(doc):
    sizes = [r["size"] for r in doc.get("results", [])]
    return [s for s in DEFAULT_SIZES if s in sizes] or sizes


def _cv(times):
    """(mean, cv%) with the sample standard deviation, as the analyzer."""
    avg = sum(times) / len(times)
    std = statistics.stdev(times) if len(times) > 1 else 0
    return avg, (std / avg * 100) if avg > 0 else 0


def _label(r):
    """What distinguishes results beside their size (a document of several collectives, types or ops)."""
    return {"collective": r.get("collective") or r.get("experiment_name") or "", "type": r.get("type", ""),
            "redop": r.get("redop", ""), "root": (r.get("root") or "").strip()}


def nprocs_of(doc, key):
    results = doc.get("results") or []
    return len(_process_times(_per_iter(results[0], key))) if results else 0


def stats_view(doc, key, sizes=None):
    out = []
    for r in doc["results"]:
        if sizes and r["size"] not in sizes:
            continue
        pi = _per_iter(r, key)
        if not pi:
            continue
        avg, mx, cv = pi.get("avg_us"), pi.get("max_us"), pi.get("cv_pct")
        spike = (mx / avg if avg > 0 else 0) if isinstance(avg, (int, float)) and isinstance(mx, (int, float)) \
            else None
        flagged = (isinstance(cv, (int, float)) and cv > 5) or (spike is not None and spike > 1.5)
        out.append(dict(_label(r), size=r["size"], avg_us=avg, min_us=pi.get("min_us"), max_us=mx,
                        p99_us=pi.get("p99_us"), cv_pct=cv, spike=spike, flagged=bool(flagged)))
    return out


def _process_rows(doc, key, sizes):
    """(result, per-process times, per-process (mean, cv%)) of each result in
    focus (`sizes`, else the analyzer's default sizes) that has process times:
    what the straggler and node views read."""
    focus = sizes or set(default_sizes(doc))
    for r in doc["results"]:
        if focus and r["size"] not in focus:
            continue
        pt = _process_times(_per_iter(r, key))
        if pt:
            yield r, pt, [_cv(times) for times in pt]


def straggler_view(doc, key, sizes=None):
    out = []
    for r, pt, stats in _process_rows(doc, key, sizes):
        procs = [{"process": p, "avg_us": avg, "min_us": min(times), "max_us": max(times), "cv_pct": cv}
                 for p, (times, (avg, cv)) in enumerate(zip(pt, stats))]
        ordered = sorted(procs, key=lambda x: x["avg_us"])  # stable: ties keep process order
        fastest, slowest = ordered[0], ordered[-1]
        noisiest = max(ordered, key=lambda x: x["cv_pct"])
        worst = max(ordered, key=lambda x: x["max_us"])
        spread = slowest["avg_us"] - fastest["avg_us"]
        out.append(dict(_label(r), size=r["size"], fastest=fastest["process"], fastest_us=fastest["avg_us"],
                        slowest=slowest["process"], slowest_us=slowest["avg_us"], spread_us=spread,
                        spread_pct=spread / fastest["avg_us"] * 100 if fastest["avg_us"] > 0 else None,
                        noisiest=noisiest["process"], noisiest_cv_pct=noisiest["cv_pct"],
                        worst_max=worst["process"], worst_max_us=worst["max_us"], processes=procs))
    return out


def spikes_view(doc, key, threshold=1.5, sizes=None):
    nprocs = nprocs_of(doc, key)
    out = []
    for r in doc["results"]:
        if sizes and r["size"] not in sizes:
            continue
        pi = _per_iter(r, key)
        avg, mx = pi.get("avg_us"), pi.get("max_us")
        if not pi or not isinstance(avg, (int, float)) or not isinstance(mx, (int, float)) or avg <= 0 \
                or mx / avg < threshold:
            continue
        pt = _process_times(pi)
        if not pt:
            continue
        spiked = {}
        for p, times in enumerate(pt):
            for i, t in enumerate(times):
                if t > avg * threshold:
                    spiked.setdefault(i, []).append(p)
        if not spiked:
            continue
        iters = []
        for i in sorted(spiked):
            procs = spiked[i]
            n = len(procs)
            iters.append({"iteration": i, "spiked": n, "max_us": max(t[i] for t in pt if i < len(t)),
                          "kind": "system-wide" if n == nprocs else ("straggler" if n == 1 else "some"),
                          "processes": procs if n < nprocs and n <= 8 else None})
        out.append(dict(_label(r), size=r["size"], avg_us=avg, max_us=mx, cv_pct=pi.get("cv_pct"), iterations=iters))
    return out


def iter0_view(doc, key, sizes=None):
    out = []
    for r in doc["results"]:
        if sizes and r["size"] not in sizes:
            continue
        times = _per_iter(r, key).get("times_us") or []
        if len(times) < 2:
            continue
        steady = times[1:]
        steady_avg, steady_cv = _cv(steady)
        _, all_cv = _cv(times)
        ratio = times[0] / steady_avg if steady_avg > 0 else 0
        out.append(dict(_label(r), size=r["size"], iter0_us=times[0], steady_avg_us=steady_avg, ratio=ratio,
                        cv_pct=all_cv, steady_cv_pct=steady_cv, flagged=ratio > 1.5))
    return out


def node_groups(doc, nprocs, procs_per_node=4):
    """[(label, [process, ...])]: by hostname when config.devices names one
    for each process, else procs_per_node processes a node, in order."""
    devices = (doc.get("config") or {}).get("devices") or []
    if len(devices) >= nprocs and all("hostname" in d for d in devices[:nprocs]):
        groups, by_host = [], {}
        for p, d in enumerate(devices[:nprocs]):
            if d["hostname"] not in by_host:
                by_host[d["hostname"]] = []
                groups.append((d["hostname"], by_host[d["hostname"]]))
            by_host[d["hostname"]].append(p)
        return groups
    return [(f"node {k}", list(range(start, min(start + procs_per_node, nprocs))))
            for k, start in enumerate(range(0, nprocs, procs_per_node))]


def nodes_view(doc, key, procs_per_node=4, sizes=None):
    nprocs = nprocs_of(doc, key)
    if not nprocs:
        return None, []
    groups = node_groups(doc, nprocs, procs_per_node)
    out = []
    for r, pt, stats in _process_rows(doc, key, sizes):
        nodes = []
        for k, (label, procs) in enumerate(groups):
            procs = [p for p in procs if p < len(pt)]
            if not procs:
                continue
            avgs = [stats[p][0] for p in procs]
            noisiest = max(procs, key=lambda p: stats[p][1])
            nodes.append({"node": k, "host": label, "processes": procs, "avg_us": sum(avgs) / len(avgs),
                          "min_avg_us": min(avgs), "max_avg_us": max(avgs), "max_us": max(max(pt[p]) for p in procs),
                          "noisiest": noisiest, "noisiest_cv_pct": stats[noisiest][1]})
        out.append(dict(_label(r), size=r["size"], nodes=nodes))
    return groups, out


def consistency(doc, key):
    """(mismatches, results checked): times_us against the max over process rows, to 0.001 us."""
    bad = total = 0
    for r in doc["results"]:
        pi = _per_iter(r, key)
        pt, times = _process_times(pi), pi.get("times_us") or []
        if pt and times:
            total += 1
            n = min(len(t) for t in pt)
            expected = [max(t[i] for t in pt) for i in range(n)]
            if len(times) != n or any(abs(a - b) >= 0.001 for a, b in zip(times, expected)):
                bad += 1
    return bad, total


def analyze(doc, in_place=False, sizes=None, threshold=1.5, procs_per_node=4, views=VIEWS):
    """Every requested view of one placement, as plain data (the --json output)."""
    key = placement_key(in_place)
    out = {"placement": "in-place" if in_place else "out-of-place", "results": len(doc.get("results", [])),
           "processes": nprocs_of(doc, key), "sizes": sorted(sizes) if sizes else None}
    bad, total = consistency(doc, key)
    out["consistency"] = {"mismatches": bad, "checked": total}
    if "stats" in views:
        out["stats"] = stats_view(doc, key, sizes)
    if "straggler" in views:
        out["straggler"] = straggler_view(doc, key, sizes)
    if "spikes" in views:
        out["threshold"] = threshold
        out["spikes"] = spikes_view(doc, key, threshold, sizes)
    if "iter0" in views:
        out["iter0"] = iter0_view(doc, key, sizes)
    if "nodes" in views:
        groups, nodes = nodes_view(doc, key, procs_per_node, sizes)
        out["node_groups"] = [{"host": h, "processes": p} for h, p in groups or []]
        out["nodes"] = nodes
    return out


def has_per_iteration(doc):
    return any(_per_iter(r, placement_key(ip)) for r in doc.get("results", []) for ip in (False, True))
