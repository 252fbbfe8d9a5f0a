"""The failures smddp-bench-torch reports, each with its failure code and
action class: rows of smddp's one table (results/src/failure_codes.cc,
listed in docs/diag.md, "Failure codes"), as smddp-bench's JSON carries
them in totals.verdicts. tests/e2e/torch checks these rows against that
table."""

WRONG = {"code": "SMDDP-BENCH-WRONG", "action": "escalate"}
BELOW_THRESHOLD = {"code": "SMDDP-BENCH-BELOW-THRESHOLD", "action": "escalate"}
ROWS = (WRONG, BELOW_THRESHOLD)


def verdicts(summary, backend):
    """A finished run's failures, in exit-code order (values first)."""
    out = []
    if summary["wrong"]:
        out.append(dict(WRONG, text=f"{summary['wrong']} elements differ from the expected values (#wrong)"))
    if summary["below_threshold"]:
        avg = summary["avg_busbw_gbps"].get(backend, 0.0)
        out.append(dict(BELOW_THRESHOLD, text=f"{backend}: average bus bandwidth {avg:.3f} GB/s below "
                                              f"--min-busbw {summary['threshold_gbps']:.3f} GB/s"))
    return out
