"""Command line: smddp-report RESULTS.json... [-o report.html] and
smddp-report compare BASE NEW [--threshold PCT] [--alpha A] [--markdown]."""
import argparse
import sys

from smddp_safeio import check_writable, decimal_arg, run_main, write_atomically

from . import UsageError, build, compare, inputs

REPORT_USAGE = "smddp-report RESULTS.json... [-o report.html] [--title TEXT] [--chartjs FILE]"
COMPARE_USAGE = "smddp-report compare BASE.json NEW.json [--threshold PCT] [--alpha A] [--markdown]"


class Parser(argparse.ArgumentParser):
    def error(self, message):  # one line and 64, not argparse's usage block and 2
        raise UsageError(message)


def report_main(argv):
    p = Parser(prog="smddp-report", usage=REPORT_USAGE,
               description="One self-contained HTML file (no network) of smddp-bench -J results, smddp-diag "
                           "fabric/preflight/isolate --json reports and smddp-model predictions. "
                           "Also: " + COMPARE_USAGE)
    p.add_argument("inputs", nargs="+", metavar="RESULTS.json")
    p.add_argument("-o", "--output", default="report.html", help="the HTML file to write (default report.html)")
    p.add_argument("--title", default="smddp report")
    p.add_argument("--chartjs", help="Chart.js UMD file to inline (default: libjs-chart.js under "
                                     "/usr/share/javascript/chart.js/; env SMDDP_REPORT_CHARTJS)")
    a = p.parse_args(argv)
    check_writable(a.output, "report")  # before any work
    chartjs = build.find_chartjs(a.chartjs)
    docs = inputs.label_docs([inputs.load(path) for path in a.inputs])
    text = build.build(docs, chartjs, a.title)
    write_atomically(a.output, text, "report")  # never a half-written report
    kinds = ", ".join(f"{sum(d.kind == k for d in docs)} {k}" for k in ("bench", "fabric", "verdicts", "model")
                      if any(d.kind == k for d in docs))
    print(f"smddp-report: wrote {a.output} ({len(text) // 1024} KiB; {kinds})", file=sys.stderr)
    return 0


def compare_main(argv):
    p = Parser(prog="smddp-report compare", usage=COMPARE_USAGE,
               description="Matches rows of two smddp-bench results files and says whether NEW regressed. "
                           "Exit 0: no regression, 2: a significant regression past the threshold, 64: inputs "
                           "that cannot be compared.")
    p.add_argument("base", metavar="BASE.json")
    p.add_argument("new", metavar="NEW.json")
    p.add_argument("--threshold", type=decimal_arg("--threshold", 0, 1e6, "percent"), default=10.0, metavar="PCT",
                   help="how much slower a row may get before it counts (percent, default 10)")
    p.add_argument("--alpha", type=decimal_arg("--alpha", 0, 1), default=0.05, help="significance level of the test (default 0.05)")
    p.add_argument("--markdown", action="store_true", help="print a Markdown table (for CI comments)")
    a = p.parse_args(argv)
    if not 0 < a.alpha < 1:
        raise UsageError(f"--alpha {a.alpha}: expected a number between 0 and 1")
    base, new = inputs.load(a.base), inputs.load(a.new)
    results, only_base, only_new = compare.compare(base, new, a.threshold, a.alpha)
    render = compare.render_markdown if a.markdown else compare.render_text
    sys.stdout.write(render(base, new, results, only_base, only_new, a.threshold, a.alpha))
    return compare.exit_code(results)


def _dispatch(argv):
    if argv and argv[0] == "compare":
        return compare_main(argv[1:])
    return report_main(argv)


def main(argv=None):
    return run_main("smddp-report", _dispatch, argv)
