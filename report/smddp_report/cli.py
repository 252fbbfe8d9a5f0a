"""Command line: smddp-report RESULTS... [-o report.html],
smddp-report compare BASE NEW [--threshold PCT] [--alpha A] [--markdown] and
smddp-report analyze RESULTS [--straggler] [--spikes] [--iter0] [--nodes] ...
RESULTS: smddp-bench or nccl-tests JSON, an nccl-tests log, NCCL Inspector
output (report only), smddp-diag or smddp-model JSON (report only)."""
import argparse
import json
import sys

from smddp_safeio import check_writable, decimal_arg, finite_json, integer_arg, run_main, write_atomically

from . import UsageError, analyzer, analyzer_text, build, compare, inputs

REPORT_USAGE = "smddp-report RESULTS... [-o report.html] [--title TEXT] [--chartjs FILE]"
COMPARE_USAGE = "smddp-report compare BASE NEW [--threshold PCT] [--alpha A] [--markdown]"
ANALYZE_USAGE = ("smddp-report analyze RESULTS [--straggler] [--spikes [--threshold X]] [--iter0] [--nodes "
                 "[--procs-per-node N]] [--all] [--in-place] [--sizes LIST] [--json]")


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
    kinds = ", ".join(f"{sum(d.kind == k for d in docs)} {k}" for k in ("bench", "fabric", "verdicts", "model",
                                                                         "inspector")
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


def _sizes(text):
    sizes = set()
    for part in text.split(","):
        sizes.add(integer_arg("--sizes", 0, 1 << 62)(part))
    return sizes


def analyze_main(argv):
    p = Parser(prog="smddp-report analyze", usage=ANALYZE_USAGE,
               description="nccl-tests' analyzer views (tools/analyze_perf_json.py: same definitions, same numbers) "
                           "of one smddp-bench -J or nccl-tests -J file with per-iteration data (-I 1, "
                           "--per-iteration); of an nccl-tests log, what it holds. Without a view: the per-iteration "
                           "statistics.")
    p.add_argument("input", metavar="RESULTS")
    for view, what in (("straggler", "each process's mean time per size: fastest, slowest, spread, noisiest"),
                       ("spikes", "iterations over --threshold x the average, and which processes"),
                       ("iter0", "iteration 0 against the rest"), ("nodes", "processes grouped by host")):
        p.add_argument(f"--{view}", action="store_true", help=what)
    p.add_argument("--all", action="store_true", help="every view")
    p.add_argument("--threshold", type=decimal_arg("--threshold", 0, 1e6), default=1.5,
                   help="spike threshold, a multiple of the average (default 1.5)")
    p.add_argument("--in-place", action="store_true", help="the in-place placement (default out-of-place)")
    p.add_argument("--sizes", type=_sizes, help="comma-separated sizes in bytes to show")
    p.add_argument("--procs-per-node", type=integer_arg("--procs-per-node", 1, 1 << 20), default=4,
                   help="processes per node where the file names no hosts (default 4)")
    p.add_argument("--json", action="store_true", help="the numbers as JSON")
    a = p.parse_args(argv)
    doc = inputs.load(a.input)
    if doc.kind != "bench" or doc.nccl is None:
        raise UsageError(f"{a.input}: analyze takes smddp-bench or nccl-tests results with their per-size "
                         f"`results`, this is {doc.source}")
    chosen = [v for v in analyzer.VIEWS[1:] if a.all or getattr(a, v)]
    views = (["stats"] if a.all or not chosen else []) + chosen
    out = analyzer.analyze(doc.nccl, a.in_place, a.sizes, a.threshold, a.procs_per_node, views)
    lines = (doc.nccl.get("config") or {}).get("rank_lines")
    if lines and "nodes" in views:
        out["rank_lines"] = lines
    if a.json:
        sys.stdout.write(json.dumps(finite_json(out), indent=1, allow_nan=False) + "\n")
    else:
        sys.stdout.write(analyzer_text.render(a.input, out, views))
    return 0


def _dispatch(argv):
    if argv and argv[0] == "compare":
        return compare_main(argv[1:])
    if argv and argv[0] == "analyze":
        return analyze_main(argv[1:])
    return report_main(argv)


def main(argv=None):
    return run_main("smddp-report", _dispatch, argv)
