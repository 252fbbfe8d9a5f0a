"""smddp-report: offline HTML reports of smddp-bench and smddp-diag results,
and a compare of two result files that catches regressions (docs/report.md)."""

EXIT_OK = 0
EXIT_REGRESSION = 2
EXIT_USAGE = 64


class UsageError(Exception):
    """Bad usage or inputs that cannot be used: one line on stderr, exit 64."""
