"""The console table and the JSON document, written as smddp-bench writes
them (bench/src/table_reporter.cc, json_reporter.cc), so smddp-report,
compare and smddp-model read either tool's results unchanged. A row is a
dict with the keys of one JSON row (and "stats"/"straggler" when set)."""
import json
import os
import sys


def _time_str(us):
    return "%7.0f" % us if us >= 1e4 else "%7.2f" % us


class Table:
    def __init__(self, quiet, out=None):
        self.quiet = quiet
        self.out = out or sys.stdout

    def _p(self, text):
        self.out.write(text)

    def begin(self, ctx):
        o = ctx["options"]
        if not self.quiet:
            self._p("# smddp-bench-torch %s: %d ranks on %d nodes, backends%s, %d warmup + %d iterations, check %d\n"
                    % (ctx["versions"]["smddp"], ctx["nranks"], ctx["nnodes"],
                       "".join(" " + b for b in o.backends), o.warmup_iters, o.iters, o.check))
            for r in ctx["ranks"]:
                self._p("#  rank %2d on %s (node %d)\n" % (r["rank"], r["host"], r["node"]))
        cols = "#%11s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  %6s  %8s  %18s  %6s\n"
        self._p("#\n#%86s%40s\n" % ("out-of-place", "in-place"))
        self._p(cols % ("size", "count", "type", "redop", "root", "time", "algbw", "busbw", "#wrong", "time",
                        "algbw", "busbw", "#wrong", "backend", "algorithm", "ratio"))
        self._p(cols % ("(B)", "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)",
                        "", "", "", ""))
        self.out.flush()

    def skipped(self, backend, what, reason):
        self._p("#  skipped (%s): %s: %s\n" % (backend, what, reason))
        self.out.flush()

    def row(self, results):
        # One line per backend; out-of-place and in-place side by side.
        i = 0
        while i < len(results):
            first = results[i]
            j, oop, ip = i, None, None
            while j < len(results) and results[j]["backend"] == first["backend"]:
                if results[j]["placement"] == "in-place":
                    ip = results[j]
                else:
                    oop = results[j]
                j += 1
            self._line(first, oop, ip)
            for r in results[i:j]:
                s = r.get("straggler")
                if s:
                    self._p("#  straggler (%s, %s): rank %d on %s is %.0f%% slower than the median rank\n"
                            % (r["backend"], r["placement"], s["rank"], s["host"], s["slower_pct"]))
            i = j
        self.out.flush()

    def _line(self, r, oop, ip):
        text = "%12d  %12d  %8s  %6s  %6d" % (r["bytes"], r["count"], r["dtype"], r["op"], r["root"])
        for p in (oop, ip):
            if p is None:
                text += "  %7s  %6s  %6s  %6s" % ("N/A", "N/A", "N/A", "N/A")
                continue
            wrong = "N/A" if p["wrong"] is None else str(p["wrong"])
            text += "  %7s  %6.2f  %6.2f  %6s" % (_time_str(p["time_us"]), p["algbw_gbps"], p["busbw_gbps"], wrong)
        main = oop or ip
        text += "  %8s  %18s  %6.2f\n" % (r["backend"], main["algorithm"], main["ratio"])
        self._p(text)
        s = main.get("per_iteration")
        if s:
            self._p("#  per-iteration (us): min %.2f p50 %.2f p95 %.2f p99 %.2f max %.2f cv %.3f\n"
                    % (s["min_us"], s["p50_us"], s["p95_us"], s["p99_us"], s["max_us"], s["cv"]))

    def end(self, summary, backends):
        self._p("# Out of bounds values : %d %s\n" % (summary["wrong"], "FAILED" if summary["wrong"] else "OK"))
        first = True
        for b in backends:
            if b not in summary["avg_busbw_gbps"]:
                continue
            value = summary["avg_busbw_gbps"][b]
            self._p(("# Avg bus bandwidth    : %g \n" % value) if first else
                    ("# Avg bus bandwidth (%s) : %g\n" % (b, value)))
            first = False
        if summary["below_threshold"]:
            self._p("# Below threshold: average bus bandwidth under --min-busbw %g GB/s\n" % summary["threshold_gbps"])
        if summary.get("error"):
            self._p("# Ended early: %s\n" % summary["error"])
        self._p("#\n")
        self.out.flush()


def write_atomically(path, text):
    """Through a temporary file and rename(): readers only see whole files."""
    tmp = "%s.tmp.%d" % (path, os.getpid())
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


class Json:
    """One document, rewritten after every row; "complete" stays false until
    the sweep ended normally, so a crash leaves a valid, partial file."""

    def __init__(self, path):
        self.path = path
        self.doc = {}

    def begin(self, ctx):
        o = ctx["options"]
        self.doc = {
            "tool": "smddp-bench-torch",
            "versions": ctx["versions"],
            "argv": ctx["argv"],
            "environment": ctx["environment"],
            "started_utc": ctx["started_utc"],
            "nranks": ctx["nranks"],
            "nnodes": ctx["nnodes"],
            "ranks": ctx["ranks"],
            "devices": {"memory": ctx["memory"]},
            "options": {"minbytes": o.min_bytes, "maxbytes": o.max_bytes, "stepfactor": float(o.stepfactor),
                        "stepbytes": o.step_bytes, "iters": o.iters, "warmup": o.warmup_iters, "check": o.check,
                        "backends": list(o.backends), "algorithm": "auto", "seed": o.seed,
                        "average": o.average},
            "rows": [],
            "complete": False,
        }
        self._flush()

    def skipped(self, backend, what, reason):
        self.doc.setdefault("skipped", []).append({"backend": backend, "what": what, "reason": reason})
        self._flush()

    def row(self, results):
        self.doc["rows"].extend(results)
        self._flush()

    def end(self, summary, backends):
        self.doc["totals"] = {"rows": len(self.doc["rows"]), "wrong": summary["wrong"],
                              "avg_busbw_gbps": summary["avg_busbw_gbps"],
                              "below_threshold": summary["below_threshold"], "exit_code": summary["exit_code"]}
        if summary.get("error"):
            self.doc["error"] = summary["error"]
        self.doc["complete"] = summary["complete"]
        self._flush()

    def _flush(self):
        write_atomically(self.path, json.dumps(self.doc, indent=2) + "\n")
