"""Two-sample tests for compare, standard library only.

Mann-Whitney U (what google/benchmark's compare.py uses), on raw samples or
on samples rebuilt from the percentiles smddp-bench writes (its JSON may
carry per-iteration summaries, not the samples). Two-sided. The p-value is
scipy.stats.mannwhitneyu's default (method='auto'), checked against scipy
by tests/e2e/report/stats_reference.py.
"""
import collections
import functools
import math

MannWhitney = collections.namedtuple("MannWhitney", "u p method")

# scipy's method='auto': the exact null distribution unless both samples are
# larger than this (or there are ties, which the exact count does not model).
EXACT_MAX_N = 8


def normal_sf(z):
    """P(Z > z) for a standard normal Z."""
    return 0.5 * math.erfc(z / math.sqrt(2))


@functools.lru_cache(maxsize=64)
def u_counts(m, n):
    """counts[k]: how many of the comb(m + n, m) equally likely orders of m
    values of one sample among n of the other (no ties) give U = k, for
    k = 0 .. m * n. Their generating function is the Gaussian binomial
    coefficient prod_{i=1..m} (1 - q^(n+i)) / (1 - q^i) (Mann and Whitney,
    1947); both factors are applied as power series truncated at degree m * n,
    exactly, since coefficient k of either product depends only on the
    coefficients up to k. O(m^2 n) integer additions."""
    m, n = min(m, n), max(m, n)  # the distribution is symmetric in m and n
    top = m * n
    c = [1] + [0] * top
    for i in range(1, m + 1):
        for k in range(top, n + i - 1, -1):  # times (1 - q^(n+i))
            c[k] -= c[k - n - i]
        for k in range(i, top + 1):  # over (1 - q^i): times 1 + q^i + q^2i + ...
            c[k] += c[k - i]
    return tuple(c)


def _rank_sum(a, b):
    """(sum of a's ranks among a + b, tie term sum(t^3 - t) over runs of t
    equal values); ties get the average of their ranks."""
    values = sorted([(x, 0) for x in a] + [(x, 1) for x in b])
    r1 = 0.0
    tie_term = 0
    i = 0
    while i < len(values):
        j = i
        while j + 1 < len(values) and values[j + 1][0] == values[i][0]:
            j += 1
        rank = (i + j) / 2 + 1
        r1 += rank * sum(1 for k in range(i, j + 1) if values[k][1] == 0)
        t = j - i + 1
        tie_term += t ** 3 - t
        i = j + 1
    return r1, tie_term


def mann_whitney_u(a, b):
    """The two-sided Mann-Whitney U test of samples a and b, as
    scipy.stats.mannwhitneyu(a, b) computes it by default. Returns
    MannWhitney(u, p, method): u is a's statistic (the pairs (x in a, y in b)
    with x > y, ties counting one half), method 'exact' or 'asymptotic':
      * exact (no ties and the smaller sample at most EXACT_MAX_N values):
        p = 2 P(U >= max(u, n1 n2 - u)) under the exact null distribution
        (u_counts), at most 1;
      * asymptotic otherwise: the normal approximation with the tie-corrected
        variance and a continuity correction of 1/2."""
    n1, n2 = len(a), len(b)
    if n1 == 0 or n2 == 0:
        raise ValueError("empty sample")
    r1, tie_term = _rank_sum(a, b)
    u1 = r1 - n1 * (n1 + 1) / 2
    big = max(u1, n1 * n2 - u1)  # the farther tail, doubled below
    if tie_term == 0 and min(n1, n2) <= EXACT_MAX_N:
        counts = u_counts(n1, n2)
        # Integer counts over an integer total: one rounding, in the division.
        return MannWhitney(u1, min(1.0, 2 * sum(counts[int(big):]) / math.comb(n1 + n2, n1)), "exact")
    n = n1 + n2
    var = n1 * n2 / 12 * ((n + 1) - tie_term / (n * (n - 1)))
    if var <= 0:
        return MannWhitney(u1, 1.0, "asymptotic")  # every value equal
    z = (big - n1 * n2 / 2 - 0.5) / math.sqrt(var)
    return MannWhitney(u1, min(1.0, 2 * normal_sf(z)), "asymptotic")


def bench_rank(frac, n):
    """The 1-based rank among n sorted calls of smddp-bench's percentile at
    frac (bench/src/stats.cc): 0 the min, 1 the max, 0.5 the upper median
    (rank n // 2 + 1, as nccl-tests), the others nearest-rank: ceil(frac * n)."""
    if frac == 0.5:
        return n // 2 + 1
    return 1 if frac <= 0 else max(1, min(n, math.ceil(frac * n)))


def rebuild_samples(quantiles, n):
    """n sorted values with the given smddp-bench percentiles (bench_rank):
    the known order statistics are exact, the others interpolated between
    them on a log scale (times are skewed). quantiles: {fraction: value},
    0 = min, 0.5 = p50, 1 = max."""
    known = {}
    for frac, value in quantiles.items():
        known[bench_rank(frac, n)] = value
    if 1 not in known or n not in known or len(known) < 2 or min(known.values()) <= 0:
        return None
    ranks = sorted(known)
    values = []
    for lo, hi in zip(ranks, ranks[1:]):
        a, b = math.log(known[lo]), math.log(max(known[hi], known[lo]))
        values.append(known[lo])  # exactly: exp(log(x)) need not be x
        for r in range(lo + 1, hi):
            values.append(math.exp(a + (b - a) * (r - lo) / (hi - lo)))
    values.append(known[ranks[-1]])
    for i in range(1, len(values)):  # percentiles of real data never decrease
        values[i] = max(values[i], values[i - 1])
    return values
