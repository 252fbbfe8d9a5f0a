"""smddp-report compare BASE NEW: row-by-row time ratios and a verdict that
accounts for noise.

Rows match on collective, dtype, op, root, size, backend, algorithm,
placement and rank count. The ratio is NEW's time of a call over BASE's, of
the statistic the test is about. A row regressed when the ratio is above
1 + threshold and, where both rows carry per-iteration data, a two-sided
test at --alpha says the difference is not noise:
  * raw samples in both (per_iteration.samples_us, each call's time, as
    smddp-bench --per-iteration writes them): their medians, and the
    Mann-Whitney U test on them, as google/benchmark's compare.py does;
  * per-iteration percentiles only (an older smddp-bench: min, p50, p95,
    p99, max of `iterations` calls): p50, and the U test on samples rebuilt
    from those percentiles (stats.rebuild_samples); it finds a 30% slowdown
    about half as often as the calls themselves do when one call in ten is
    preempted, since p95 and above are then all preempted calls;
  ranks, not means, so one preempted call does not hide a slowdown;
  * else time_us and the threshold alone.
The p-value is scipy.stats.mannwhitneyu's default: exact for small samples
without ties, else the normal approximation (stats.mann_whitney_u).
"""
import math
import statistics

from . import EXIT_OK, EXIT_REGRESSION, UsageError, stats
from .inputs import per_iteration, row_nranks

KEY_FIELDS = ("collective", "dtype", "op", "root", "bytes", "backend", "algorithm", "placement", "nranks")
MIN_SAMPLES = 5  # fewer calls are not tested: 4 against 4 cannot even reach p < 0.025 (exact p >= 2/70)


def row_key(doc, row):
    return (row["collective"], row.get("dtype", ""), row.get("op", "none"), row.get("root", -1), row["bytes"],
            row["backend"], row.get("algorithm", ""), row.get("placement", "out-of-place"), row_nranks(doc, row))


def key_name(key):
    coll, dtype, op, root, size, backend, algo, placement, nranks = key
    parts = [coll, dtype] + ([op] if op != "none" else []) + ([f"root {root}"] if root not in (-1, None) else [])
    return " ".join(parts + [f"{size} B", f"{backend}/{algo}" if algo else backend, placement, f"np{nranks}"])


def _samples(pi):
    s = pi.get("samples_us") if pi else None
    if isinstance(s, list) and len(s) >= MIN_SAMPLES and all(isinstance(x, (int, float)) for x in s):
        return s
    return None


MAX_REBUILT = 2000  # the U test's cost grows with n log n; more calls add little


def _rebuilt(pi, row):
    if not pi:
        return None
    q = {frac: pi.get(key) for frac, key in ((0, "min_us"), (0.5, "p50_us"), (0.95, "p95_us"), (0.99, "p99_us"),
                                             (1, "max_us"))}
    q = {f: v for f, v in q.items() if isinstance(v, (int, float))}
    n = row.get("iterations")
    if 0.5 not in q or not isinstance(n, int) or n < MIN_SAMPLES:
        return None
    return stats.rebuild_samples(q, min(n, MAX_REBUILT))


def measure(base, new):
    """(statistic, base value, new value, test, p-value or None) for one matched pair."""
    pb, pn = per_iteration(base), per_iteration(new)
    sb, sn = _samples(pb), _samples(pn)
    if sb and sn:
        return "p50", statistics.median(sb), statistics.median(sn), "mann-whitney", stats.mann_whitney_u(sb, sn).p
    rb, rn = _rebuilt(pb, base), _rebuilt(pn, new)
    if rb and rn:
        return "p50", pb["p50_us"], pn["p50_us"], "u-quantiles", stats.mann_whitney_u(rb, rn).p
    return "time", base["time_us"], new["time_us"], "threshold", None


def _rows_by_key(doc):
    out = {}
    for row in doc.data["rows"]:
        out.setdefault(row_key(doc, row), row)  # a repeated row: the first one counts
    return out


def _describe(doc):
    rows = doc.data["rows"]
    colls = sorted({r["collective"] for r in rows})
    ranks = sorted({str(row_nranks(doc, r)) for r in rows})
    return f"{len(rows)} rows ({', '.join(colls) or 'none'}; np {', '.join(ranks) or '-'})"


def compare(base, new, threshold_pct, alpha):
    """Returns (results, only_base, only_new); raises UsageError when nothing matches."""
    for d in (base, new):
        if d.kind != "bench":
            raise UsageError(f"{d.path}: compare takes smddp-bench results or nccl-tests' (JSON or log), this is "
                             f"{d.source if d.source != d.kind else f'a {d.kind} document'}")
    b, n = _rows_by_key(base), _rows_by_key(new)
    common = [k for k in b if k in n]
    if not common:
        raise UsageError(f"nothing to compare: no row of {base.path} [{_describe(base)}] matches one of {new.path} "
                         f"[{_describe(new)}] on collective, dtype, op, root, size, backend, algorithm, placement "
                         f"and rank count")
    limit = 1 + threshold_pct / 100
    results = []
    for k in common:
        rb, rn = b[k], n[k]
        metric, tb, tn, test, p = measure(rb, rn)
        res = {"key": k, "name": key_name(k), "metric": metric, "base_us": tb, "new_us": tn, "ratio": None,
               "test": "-", "p": None}
        if not (tb > 0 and tn > 0 and math.isfinite(tb) and math.isfinite(tn)):
            res["verdict"] = "no time"
            results.append(res)
            continue
        ratio = tn / tb
        significant = p is None or p < alpha
        if ratio > limit:
            verdict = "regressed" if significant else "noise"
        elif ratio < 1 / limit:
            verdict = "improved" if significant else "noise"
        else:
            verdict = "same"
        res.update(ratio=ratio, test=test, p=p, verdict=verdict)
        results.append(res)
    return results, [k for k in b if k not in n], [k for k in n if k not in b]


def _fmt_us(x):
    return f"{x:.2f}" if x < 1e4 else f"{x:.0f}"


def _fmt_p(p):
    return "-" if p is None else (f"{p:.4f}" if p >= 1e-4 else f"{p:.1e}")


def render_text(base, new, results, only_base, only_new, threshold_pct, alpha):
    lines = [f"# base {base.path}: {_describe(base)}", f"# new  {new.path}: {_describe(new)}",
             f"# ratio = new / base time of a call (time: the median call with per-iteration data, "
             f"else time_us); regressed: ratio above {1 + threshold_pct / 100:.2f} and, where tested, p < {alpha}"]
    width = max(len(r["name"]) for r in results)
    lines.append(f"{'row':<{width}}  {'time':<4} {'base_us':>10} {'new_us':>10} {'ratio':>7}  {'test':<12} {'p':>8}  "
                 f"verdict")
    for r in results:
        ratio = "-" if r["ratio"] is None else f"{r['ratio']:.3f}"
        lines.append(f"{r['name']:<{width}}  {r['metric']:<4} {_fmt_us(r['base_us']):>10} {_fmt_us(r['new_us']):>10} {ratio:>7}  "
                     f"{r['test']:<12} {_fmt_p(r['p']):>8}  {r['verdict']}")
    if only_base or only_new:
        lines.append(f"# unmatched: {len(only_base)} rows only in base, {len(only_new)} only in new")
        lines += [f"#   only in base: {key_name(k)}" for k in only_base[:20]]
        lines += [f"#   only in new:  {key_name(k)}" for k in only_new[:20]]
    lines.append(verdict_line(results, threshold_pct))
    return "\n".join(lines) + "\n"


def render_markdown(base, new, results, only_base, only_new, threshold_pct, alpha):
    out = [f"**smddp-report compare**: {verdict_line(results, threshold_pct)}", "",
           f"base `{base.path}`, new `{new.path}`; ratio = new / base time of a call (the `time` column: the median call "
           f"with per-iteration data, else time_us); threshold {threshold_pct:g}%, "
           f"alpha {alpha:g}", "",
           "| collective | dtype | op | size (B) | backend | algorithm | placement | ranks | time | base (us) "
           "| new (us) | ratio | test | p | verdict |",
           "| --- | --- | --- | ---: | --- | --- | --- | ---: | --- | ---: | ---: | ---: | --- | ---: | --- |"]
    for r in results:
        coll, dtype, op, _root, size, backend, algo, placement, nranks = r["key"]
        ratio = "-" if r["ratio"] is None else f"{r['ratio']:.3f}"
        verdict = f"**{r['verdict']}**" if r["verdict"] == "regressed" else r["verdict"]
        out.append(f"| {coll} | {dtype} | {op} | {size} | {backend} | {algo} | {placement} | {nranks} | {r['metric']} | "
                   f"{_fmt_us(r['base_us'])} | {_fmt_us(r['new_us'])} | {ratio} | {r['test']} | {_fmt_p(r['p'])} | "
                   f"{verdict} |")
    if only_base or only_new:
        out += ["", f"Unmatched: {len(only_base)} rows only in base, {len(only_new)} only in new."]
    return "\n".join(out) + "\n"


def verdict_line(results, threshold_pct):
    bad = [r for r in results if r["verdict"] == "regressed"]
    if not bad:
        return f"no regression in {len(results)} matched rows (threshold {threshold_pct:g}%)"
    named = "; ".join(f"{r['name']} (x{r['ratio']:.2f}, {r['test']} p={_fmt_p(r['p'])})" for r in bad)
    return f"REGRESSION in {len(bad)} of {len(results)} matched rows past {threshold_pct:g}%: {named}"


def exit_code(results):
    return EXIT_REGRESSION if any(r["verdict"] == "regressed" for r in results) else EXIT_OK
