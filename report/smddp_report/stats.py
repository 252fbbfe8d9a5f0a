"""Two-sample tests for compare, standard library only.

Mann-Whitney U (what google/benchmark's compare.py uses), on raw samples or
on samples rebuilt from the nearest-rank percentiles smddp-bench writes
(its JSON carries per-iteration summaries, not the samples). Two-sided.
"""
import math


def normal_sf(z):
    """P(Z > z) for a standard normal Z."""
    return 0.5 * math.erfc(z / math.sqrt(2))


def mann_whitney_u(a, b):
    """Two-sided p-value of the Mann-Whitney U test, normal approximation with
    tie and continuity corrections (as scipy's default for larger samples)."""
    n1, n2 = len(a), len(b)
    if n1 == 0 or n2 == 0:
        raise ValueError("empty sample")
    values = sorted([(x, 0) for x in a] + [(x, 1) for x in b])
    ranks = [0.0] * len(values)
    tie_term = 0.0
    i = 0
    while i < len(values):
        j = i
        while j + 1 < len(values) and values[j + 1][0] == values[i][0]:
            j += 1
        for k in range(i, j + 1):
            ranks[k] = (i + j) / 2 + 1  # average rank of a run of ties
        t = j - i + 1
        tie_term += t ** 3 - t
        i = j + 1
    r1 = sum(r for r, (_, side) in zip(ranks, values) if side == 0)
    u1 = r1 - n1 * (n1 + 1) / 2
    mu = n1 * n2 / 2
    n = n1 + n2
    var = n1 * n2 / 12 * ((n + 1) - tie_term / (n * (n - 1)))
    if var <= 0:
        return 1.0  # every value equal
    z = (abs(u1 - mu) - 0.5) / math.sqrt(var)
    return min(1.0, 2 * normal_sf(max(z, 0.0)))


def rebuild_samples(quantiles, n):
    """n sorted values with the given nearest-rank percentiles, as smddp-bench
    computes them (stats.cc: the value of 1-based rank ceil(p * n)): the known
    order statistics are exact, the others interpolated between them on a log
    scale (times are skewed). quantiles: {fraction: value}, 0 = min, 1 = max."""
    known = {}
    for frac, value in quantiles.items():
        rank = 1 if frac <= 0 else max(1, min(n, math.ceil(frac * n)))
        known[rank] = value
    if 1 not in known or n not in known or len(known) < 2 or min(known.values()) <= 0:
        return None
    ranks = sorted(known)
    values = []
    for lo, hi in zip(ranks, ranks[1:]):
        a, b = math.log(known[lo]), math.log(max(known[hi], known[lo]))
        for r in range(lo, hi):
            values.append(math.exp(a + (b - a) * (r - lo) / (hi - lo)))
    values.append(known[ranks[-1]])
    for i in range(1, len(values)):  # percentiles of real data never decrease
        values[i] = max(values[i], values[i - 1])
    return values
