"""smddp-report: offline HTML reports of smddp-bench and smddp-diag results,
and a compare of two result files that catches regressions (docs/report.md)."""
import os
import sys

try:
    import smddp_safeio
except ImportError:  # common/python (source tree), or PREFIX/lib/smddp/python (installed under share/smddp/report)
    _here = os.path.dirname(os.path.realpath(__file__))
    for _dir in (os.path.join(_here, "..", "..", "common", "python"),
                 os.path.join(_here, "..", "..", "..", "..", "lib", "smddp", "python")):
        if os.path.isfile(os.path.join(_dir, "smddp_safeio.py")):
            sys.path.insert(0, os.path.normpath(_dir))
            break
    import smddp_safeio

EXIT_OK = 0
EXIT_REGRESSION = 2
EXIT_USAGE = smddp_safeio.EXIT_USAGE
# Bad usage or inputs that cannot be used: one line on stderr, exit 64.
UsageError = smddp_safeio.UsageError
