#!/usr/bin/env python3
"""smddp-report's statistics (report/smddp_report/stats.py, compare.py)
against scipy and numpy, the reference implementations of the same
definitions: Mann-Whitney U and its two-sided p-value (scipy.stats.
mannwhitneyu's default, exact and asymptotic), the exact null distribution
against enumeration, smddp-bench's percentile ranks and the samples rebuilt
from them (numpy.percentile), and compare's medians.

Usage: stats_reference.py --package REPORT_DIR [unittest arguments]

scipy and numpy are test-only dependencies (python3-scipy, installed by
scripts/install-deps.sh); without them this fails, it does not skip. Random
samples take a seed, printed first (SMDDP_TEST_SEED=N replays it).
"""
import argparse
import itertools
import math
import os
import random
import sys
import unittest
from fractions import Fraction

try:
    import numpy
    import scipy.stats
except ImportError as e:
    print(f"FAIL: {e}: the reference needs scipy and numpy (apt-get install python3-scipy; "
          f"scripts/install-deps.sh), run by {sys.executable}")
    sys.exit(1)

SEED = int(os.environ.get("SMDDP_TEST_SEED") or int.from_bytes(os.urandom(4), "little"))
REL = 1e-12  # the normal approximation: scipy's normal tail (ndtr) against math.erfc
# The exact p: ours is one rounding of an integer ratio (checked bit for bit
# against enumeration below); scipy sums float probabilities.
REL_EXACT = 1e-14
stats = compare = None  # imported in main() from --package


def rel_err(x, ref):
    return abs(x - ref) / abs(ref) if ref else abs(x)


def sample(rng, n, ties):
    """n times, skewed as call times are; with ties, drawn from few values."""
    if ties:
        return [float(rng.randint(1, max(2, n // 2))) for _ in range(n)]
    return [rng.lognormvariate(math.log(40), 0.3) for _ in range(n)]


class MannWhitney(unittest.TestCase):
    def check_pair(self, a, b, seen):
        ours = stats.mann_whitney_u(a, b)
        ref = scipy.stats.mannwhitneyu(a, b)  # the default: two-sided, method='auto', continuity correction
        what = f"a={a} b={b}: ours {ours}, scipy {ref}"
        self.assertEqual(ours.u, ref.statistic, what)  # a multiple of 1/2: exact in both
        # The other method's p differs by far more than REL (unless both
        # are 1), so a wrong choice between exact and asymptotic fails here.
        self.assertLessEqual(rel_err(ours.p, ref.pvalue), REL_EXACT if ours.method == "exact" else REL, what)
        seen.add((ours.method, min(len(a), len(b)) <= 8, len(set(a + b)) < len(a + b)))

    def test_against_scipy_small(self):
        """Every pair of sizes 1..12, with and without ties, equal or
        shifted, both directions; both sides of the exact/asymptotic line."""
        rng = random.Random(SEED)
        seen = set()
        for n1, n2 in itertools.product(range(1, 13), repeat=2):
            for _ in range(6):
                ties = rng.random() < 0.5
                a = sample(rng, n1, ties)
                b = [x * rng.choice((1, 1, 1.5, 3)) for x in sample(rng, n2, ties)]
                self.check_pair(a, b, seen)
                self.check_pair(b, a, seen)
        # exact: no ties, the smaller sample at most 8; asymptotic otherwise.
        self.assertEqual(seen, {("exact", True, False), ("asymptotic", True, True), ("asymptotic", False, True),
                                ("asymptotic", False, False)})

    def test_against_scipy_larger(self):
        """Sizes compare sees (5 to 2000), one small against one large
        (exact), far apart (p deep in the normal tail)."""
        rng = random.Random(SEED + 1)
        seen = set()
        for n1, n2 in ((5, 5), (3, 60), (8, 40), (9, 9), (20, 20), (20, 37), (100, 100), (2000, 2000)):
            for shift in (1, 1.1, 2, 10):
                for ties in (False, True):
                    a = sample(rng, n1, ties)
                    b = [x * shift for x in sample(rng, n2, ties)]
                    self.check_pair(a, b, seen)
                    self.check_pair(b, a, seen)
        self.assertIn(("exact", True, False), seen)

    def test_all_equal(self):
        for a, b in (([3.0], [3.0]), ([1.0] * 4, [1.0] * 9), ([2.0] * 10, [2.0] * 10)):
            self.assertEqual(stats.mann_whitney_u(a, b).p, scipy.stats.mannwhitneyu(a, b).pvalue)
            self.assertEqual(stats.mann_whitney_u(a, b).p, 1.0)

    def test_exact_distribution_by_enumeration(self):
        """u_counts against every placement of the ranks, and each
        placement's U and exact p against the enumerated tail as a fraction,
        to the last bit."""
        for m, n in itertools.product(range(1, 8), repeat=2):
            placements = list(itertools.combinations(range(1, m + n + 1), m))
            u_of = [sum(chosen) - m * (m + 1) // 2 for chosen in placements]  # the others below each chosen rank
            counts = [u_of.count(u) for u in range(m * n + 1)]
            self.assertEqual(list(stats.u_counts(m, n)), counts, f"m={m} n={n}")
            total = math.comb(m + n, m)
            for chosen, u in zip(placements, u_of):
                a = [float(r) for r in chosen]
                b = [float(r) for r in range(1, m + n + 1) if r not in chosen]
                got = stats.mann_whitney_u(a, b)
                tail = sum(counts[max(u, m * n - u):])
                self.assertEqual((got.u, got.method), (u, "exact"), f"a={a} b={b}")
                self.assertEqual(got.p, float(min(Fraction(1), Fraction(2 * tail, total))), f"a={a} b={b}")

    def test_normal_tail(self):
        for z in [i / 8 for i in range(0, 300)]:
            self.assertLessEqual(rel_err(stats.normal_sf(z), scipy.stats.norm.sf(z)), REL, f"z={z}")


def bench_percentiles(calls):
    """What smddp-bench writes (bench/src/stats.cc), by numpy's definitions:
    p50 the upper median (method 'higher'), p95 and p99 nearest-rank
    (method 'inverted_cdf')."""
    x = numpy.asarray(calls)
    return {0: float(x.min()), 0.5: float(numpy.percentile(x, 50, method="higher")),
            0.95: float(numpy.percentile(x, 95, method="inverted_cdf")),
            0.99: float(numpy.percentile(x, 99, method="inverted_cdf")), 1: float(x.max())}


class Percentiles(unittest.TestCase):
    def test_bench_rank_is_numpys(self):
        rng = random.Random(SEED + 2)
        for n in range(1, 400):
            calls = sorted(rng.lognormvariate(0, 1) for _ in range(n))
            for frac, value in bench_percentiles(calls).items():
                self.assertEqual(calls[stats.bench_rank(frac, n) - 1], value, f"n={n} frac={frac}")

    def test_rebuilt_samples_keep_the_percentiles(self):
        """Samples rebuilt from the five percentiles have those percentiles,
        by numpy's computation, and never decrease."""
        rng = random.Random(SEED + 3)
        for n in list(range(2, 60)) + [100, 999, 1000, 2000]:
            calls = [rng.lognormvariate(math.log(40), 0.3) * (rng.uniform(3, 10) if rng.random() < .1 else 1)
                     for _ in range(n)]
            q = bench_percentiles(calls)
            rebuilt = stats.rebuild_samples(q, n)
            self.assertEqual(len(rebuilt), n)
            self.assertEqual(rebuilt, sorted(rebuilt))
            self.assertEqual(bench_percentiles(rebuilt), q, f"n={n}")


def calls_row(calls, with_samples=True):
    pi = {"min_us": min(calls), "p50_us": sorted(calls)[len(calls) // 2], "max_us": max(calls)}
    pi.update({k: v for k, v in zip(("p95_us", "p99_us"), list(bench_percentiles(calls).values())[2:4])})
    if with_samples:
        pi["samples_us"] = calls
    return {"collective": "allreduce", "bytes": 1024, "backend": "smddp", "time_us": sum(calls) / len(calls),
            "iterations": len(calls), "per_iteration": pi}


class Compare(unittest.TestCase):
    def test_measure(self):
        """compare's statistic and p-value for a pair of rows: the medians
        (numpy.median) and scipy's U test of the calls, or of the samples
        rebuilt from the percentiles."""
        rng = random.Random(SEED + 4)
        for n in (5, 6, 8, 9, 20, 21, 500):
            for shift in (1, 1.3, 3):
                base = [rng.lognormvariate(math.log(40), 0.3) for _ in range(n)]
                new = [shift * rng.lognormvariate(math.log(40), 0.3) for _ in range(n)]
                metric, tb, tn, test, p = compare.measure(calls_row(base), calls_row(new))
                self.assertEqual((metric, test), ("p50", "mann-whitney"))
                self.assertEqual((tb, tn), (float(numpy.median(base)), float(numpy.median(new))))
                self.assertLessEqual(rel_err(p, scipy.stats.mannwhitneyu(base, new).pvalue), REL, f"n={n}")
                rb, rn = calls_row(base, False), calls_row(new, False)
                metric, tb, tn, test, p = compare.measure(rb, rn)
                self.assertEqual((metric, test), ("p50", "u-quantiles"))
                rebuilt = [stats.rebuild_samples(bench_percentiles(x), n) for x in (base, new)]
                self.assertLessEqual(rel_err(p, scipy.stats.mannwhitneyu(*rebuilt).pvalue), REL, f"n={n}")

    def test_five_calls_apart_are_significant(self):
        """Five calls each, every new one slower: the exact p, 2 / comb(10, 5)."""
        base = [10.0, 11.0, 12.0, 13.0, 14.0]
        new = [20.0, 21.0, 22.0, 23.0, 24.0]
        p = compare.measure(calls_row(base), calls_row(new))[4]
        self.assertEqual(p, 2 / 252)
        self.assertEqual(p, scipy.stats.mannwhitneyu(base, new).pvalue)


def main():
    global stats, compare
    p = argparse.ArgumentParser()
    p.add_argument("--package", required=True, help="the folder holding smddp_report")
    args, rest = p.parse_known_args()
    sys.path.insert(0, args.package)
    from smddp_report import compare as c, stats as s  # noqa: E402
    stats, compare = s, c
    print(f"seed {SEED} (SMDDP_TEST_SEED={SEED} replays it); scipy {scipy.__version__}, numpy {numpy.__version__}")
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)


if __name__ == "__main__":
    main()
