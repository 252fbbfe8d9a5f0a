"""The console table and the JSON document, written as smddp-bench writes
them (bench/src/reporters/table_reporter.cc, json_reporter.cc), so smddp-report,
compare and smddp-model read either tool's results unchanged. A row is a
dict with the keys of one JSON row (and "stats"/"straggler" when set)."""
import json
import sys

import smddp_safeio


PROGRAMS = {"allreduce": "all_reduce_perf", "allgather": "all_gather_perf", "allgather_list": "all_gather_perf",
            "reducescatter": "reduce_scatter_perf", "broadcast": "broadcast_perf", "reduce": "reduce_perf",
            "alltoall": "alltoall_perf", "barrier": "barrier_perf"}
REDUCING = {"allreduce", "reducescatter", "reduce"}


def fit(v, width):
    """A number in `width` characters, as precise as fits (nccl-tests' rule,
    as bench/src/reporters/table_reporter.cc applies it)."""
    for fmt in ("%*.2f", "%*.1f", "%*.0f"):
        text = fmt % (width, v)
        if len(text) <= width:
            return text
    return ("%*.1e" if width >= 7 else "%*.0e") % (width, v)


class Table:
    """nccl-tests 2.19's layout, section by section, as smddp-bench prints it
    (docs/bench.md, "The table"): each collective is a preamble, a header,
    its rows and a footer; backend, algorithm and ratio follow the 13
    nccl-tests fields only when backends are compared."""

    def __init__(self, quiet, out=None):
        self.quiet = quiet
        self.out = out or sys.stdout
        self.ctx = None
        self.section = None
        self.wrong = 0
        self.sums = {}

    def _p(self, text):
        self.out.write(text)

    def begin(self, ctx):
        self.ctx = ctx
        o = ctx["options"]
        self.extras = len(o.backends) > 1
        self._open(o.collectives[0])

    def _open(self, collective):
        self.section, self.wrong, self.sums = PROGRAMS[collective], 0, {}
        o, ctx = self.ctx["options"], self.ctx
        if not self.quiet:
            v = ctx["versions"]
            self._p("# smddp-bench-torch version %s torch=%s backends=%s\n"
                    % (v["smddp"], v.get("torch", "unknown"), ",".join(o.backends)))
            self._p("# Collective test starting: %s\n" % self.section)
            step = "%d(bytes)" % o.step_bytes if o.step_bytes else "%g(factor)" % o.stepfactor
            self._p("# nThread 1 nGpus 1 minBytes %d maxBytes %d step: %s warmup iters: %d iters: %d agg iters: 1 "
                    "validation: %d graph: 0 unalign: 0\n"
                    % (o.min_bytes, o.max_bytes, step, o.warmup_iters, o.iters, o.check))
            self._p("#\n# Using devices\n")
            memory = ctx["memory"]
            for r, p in zip(ctx["ranks"], ctx["placed"]):
                self._p("#  Rank %2d Group %2d Pid %6d on %10s device %2d [%s] %s memory, node %d\n"
                        % (r["rank"], 0, p["pid"], r["host"], p["device"], memory, memory, r["node"]))
        self._p("#\n")
        if self.extras:
            self._p("# ratio: the first backend's (%s) busbw over this backend's, time over the first's for a "
                    "barrier: above 1 is slower\n" % o.backends[0])
        head = "# %10s  %12s  %8s  %6s  %6s"
        titles = head % ("size", "count", "type", "redop", "root")
        units = head % ("(B)", "(elements)", "", "", "")
        for _ in range(2):
            titles += "  %7s  %6s  %6s  %6s" % ("time", "algbw", "busbw", "#wrong")
            units += "  %7s  %6s  %6s  %6s" % ("(us)", "(GB/s)", "(GB/s)", "")
        if self.extras:
            titles += "  %8s  %18s  %6s" % ("backend", "algorithm", "ratio")
            units += "  %8s  %18s  %6s" % ("", "", "")
        self._p("# %10s  %12s  %8s  %6s  %6s  %-34s%-34s\n"
                % ("", "", "", "", "", "         out-of-place", "         in-place"))
        self._p("%s \n%s \n" % (titles, units))
        self.out.flush()

    def _close(self, summary):
        o = self.ctx["options"]
        self._p("# %-20s : %d %s\n" % ("Out of bounds values", self.wrong, "FAILED" if self.wrong else "OK"))
        avg = {b: s / k for b, (s, k) in self.sums.items()}
        first = avg.get(o.backends[0])
        verdict = ""
        if o.min_busbw > 0 and first is not None:
            verdict = "FAILED" if first < o.min_busbw else "OK"
        self._p("# %-20s : %s %s\n" % ("Avg bus bandwidth", "N/A" if first is None else "%g" % first, verdict))
        for b in o.backends[1:]:
            if b in avg:
                self._p("# %s average bus bandwidth : %g\n" % (b, avg[b]))
        self._p("#\n# Collective test concluded: %s\n#\n" % self.section)
        error = summary.get("error") if summary else None
        self._p("# error: %s\n" % error if error else "\n")
        self.out.flush()

    def skipped(self, backend, what, reason):
        self._p("#  skipped (%s): %s: %s\n" % (backend, what, reason))
        self.out.flush()

    def row(self, results):
        if not results:
            return
        if PROGRAMS[results[0]["collective"]] != self.section:
            self._close(None)
            self._open(results[0]["collective"])
        # One line per backend; out-of-place and in-place side by side.
        i = 0
        while i < len(results):
            first = results[i]
            j, oop, ip = i, None, None
            while j < len(results) and results[j]["backend"] == first["backend"]:
                r = results[j]
                if r["placement"] == "in-place":
                    ip = r
                else:
                    oop = r
                self.wrong += r["wrong"] or 0
                if r["collective"] != "barrier":  # no bytes, no bandwidth
                    acc = self.sums.setdefault(r["backend"], [0.0, 0])
                    acc[0] += r["busbw_gbps"]
                    acc[1] += 1
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
        redop = r["op"] if r["collective"] in REDUCING else "none"
        text = "%12d  %12d  %8s  %6s  %6d" % (r["bytes"], r["count"], r["dtype"], redop, r["root"])
        for p in (oop, ip):
            if p is None:
                text += "  %7s  %6s  %6s  %6s" % ("N/A", "N/A", "N/A", "N/A")
                continue
            wrong = "N/A" if p["wrong"] is None else str(p["wrong"])
            text += "  %7s  %6s  %6s  %6s" % (fit(p["time_us"], 7), fit(p["algbw_gbps"], 6),
                                              fit(p["busbw_gbps"], 6), wrong)
        main = oop or ip
        if self.extras:
            text += "  %8s  %18s  %6.2f" % (r["backend"], main["algorithm"], main["ratio"])
        self._p(text + "\n")
        s = main.get("per_iteration")
        if s:
            self._p("#  per-iteration (us): min %.2f p50 %.2f p95 %.2f p99 %.2f max %.2f cv %.3f\n"
                    % (s["min_us"], s["p50_us"], s["p95_us"], s["p99_us"], s["max_us"], s["cv"]))

    def end(self, summary, backends):
        if self.ctx is None:
            return
        self._close(summary)
        if summary["below_threshold"]:
            self._p("# Below threshold: a collective's average bus bandwidth is under --min-busbw %g GB/s\n"
                    % summary["threshold_gbps"])
        self.out.flush()


def write_atomically(path, text):
    """Readers only see whole files; smddp-bench's rules for links, devices and FIFOs."""
    smddp_safeio.write_atomically(path, text, "-J/--output-file")


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
        # Each failure with its code and action class, for automation;
        # empty for a run that passed (smddp-bench's totals.verdicts).
        if summary["complete"]:
            self.doc["totals"]["verdicts"] = summary["verdicts"]
        if summary.get("error"):
            self.doc["error"] = summary["error"]
        self.doc["complete"] = summary["complete"]
        self._flush()

    def _flush(self):
        write_atomically(self.path, json.dumps(self.doc, indent=2) + "\n")
