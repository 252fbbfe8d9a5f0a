"""The exporter's --inspector source: NCCL Inspector output (our fixtures in
fixtures/inspector/, written in the plugin's documented formats) served on
/metrics under the names and labels of docs/metrics.md, re-read as it grows,
with bad files costing one warning and a metric."""

import os
import re
import shutil
import subprocess

from harness import ARGS, case, check, equal, http_get, wait_for

FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures", "inspector")
SAMPLE = re.compile(r'^([a-z_]+)(?:\{(.*)\})? (\S+)$')


def parse(body):
    """{(name, ((label, value), ...)): value} of a Prometheus text body."""
    out = {}
    for line in body.splitlines():
        m = SAMPLE.match(line)
        if not m:
            continue
        labels = tuple(sorted(re.findall(r'([a-z_]+)="((?:[^"\\]|\\.)*)"', m.group(2) or "")))
        out[(m.group(1), labels)] = float(m.group(3))
    return out


def key(**labels):
    full = {"backend": "nccl", "job_id": "none", "rank": "none", "gpu": "none", "algorithm": "none", "protocol": "none"}
    full.update(labels)
    return tuple(sorted(full.items()))


DP = dict(host="node-a", comm="DP Group 0", rank="0", nranks="4", nnodes="2")
TP = dict(host="node-b", job_id="777", comm="TP Group 1", gpu="2", nranks="8", nnodes="1")


def close(got, want, what):
    check(abs(got - want) <= 1e-9 * abs(want), f"{what}: got {got!r}, want {want!r}")


def series(metrics, name):
    return {k[1]: v for k, v in metrics.items() if k[0] == name}


@case
def exporter_inspector(tmp):
    from cases_exporter import start_exporter
    data = os.path.join(tmp, "nccl-inspector-777")
    shutil.copytree(FIXTURES, data)
    log = os.path.join(data, "node-a-pid41.log")
    servers = []
    try:
        exp, port = start_exporter(tmp, "inspector", ["--interval", "0.2", "--inspector", data])
        servers.append(exp)

        def scrape():
            return parse(http_get(f"http://127.0.0.1:{port}/metrics")[1])
        body = http_get(f"http://127.0.0.1:{port}/metrics")[1]
        lint = subprocess.run([ARGS.promtool, "check", "metrics"], input=body, capture_output=True, text=True)
        equal((lint.returncode, lint.stdout + lint.stderr), (0, ""), "promtool check metrics with Inspector series")
        m = parse(body)
        allreduce = key(**DP, collective="allreduce", size="1048576")
        equal(series(m, "smddp_inspector_busbw_bytes_per_second"), {
            allreduce: 39.3216e9,  # the later of two records
            key(**DP, collective="reducescatter", size="3145728"): 11.79648e9,
            key(host="node-a", comm="0xfeed", rank="0", nranks="4", nnodes="2", collective="send", size="4096"): 0.5e9,
            key(**TP, collective="allgather", size="16777216", algorithm="ring", protocol="ll128"): 130e9,  # appended sample wins
            key(**TP, collective="recv", size="2097152"): 17.25e9,
        }, "bus bandwidth: JSON and .prom under one name")
        close(series(m, "smddp_inspector_time_seconds")[allreduce], 40e-6, "time of the last AllReduce")
        equal(series(m, "smddp_inspector_algbw_bytes_per_second")[allreduce], 26.2144e9, "algorithm bandwidth (JSON)")
        close(series(m, "smddp_inspector_time_seconds")[key(**TP, collective="allgather", size="16777216", algorithm="ring",
                                                           protocol="ll128")], 950.25e-6, ".prom time")
        equal(series(m, "smddp_inspector_operations_total")[allreduce], 2.0, "records read")
        equal(series(m, "smddp_inspector_files"), {(("format", "json"),): 1.0, (("format", "prom"),): 1.0}, "files")
        equal(m[("smddp_inspector_bad_files", ())], 0.0, "no bad file")
        equal(m[("smddp_inspector_last_record_timestamp_seconds", ())] >= 1767600000.0004, True, "newest record time")

        # The job goes on: a record appended in two writes (half a line at first).
        rec = open(log).readline().replace('"coll_exec_time_us":50', '"coll_exec_time_us":25').replace('31.45728', '62.91456')
        with open(log, "a") as f:
            f.write(rec[:60])
        with open(log, "a") as f:
            f.write(rec[60:])
        wait_for("the appended record", lambda: series(scrape(), "smddp_inspector_busbw_bytes_per_second").get(allreduce) == 62.91456e9)
        equal(series(scrape(), "smddp_inspector_operations_total")[allreduce], 3.0, "three records")

        # Hostile input: a line that is no record, a FIFO with no writer: one warning each, a metric, no hang.
        with open(log, "a") as f:
            f.write('{"header": [1, 2]}\n')
        os.mkfifo(os.path.join(data, "stuck.jsonl"))
        wait_for("two bad files", lambda: scrape()[("smddp_inspector_bad_files", ())] == 2.0)
        m = scrape()
        equal(m[("smddp_inspector_bad_lines_total", ())], 1.0, "one bad line")
        equal(series(m, "smddp_inspector_busbw_bytes_per_second")[allreduce], 62.91456e9, "good series kept")
        # A file that goes away takes its series with it.
        os.remove(os.path.join(data, "nccl_inspector_metrics_GPU-5eed-0002.prom"))
        wait_for(".prom series gone", lambda: not any(dict(k).get("host") == "node-b"
                                                      for k in series(scrape(), "smddp_inspector_busbw_bytes_per_second")))
        check(exp.proc.poll() is None, "the exporter still runs")
    finally:
        codes = [s.stop() for s in servers]
    equal(codes, [0], "exporter exits 0 on SIGTERM")
    warnings = [l for l in open(os.path.join(tmp, "inspector.log")).read().splitlines() if "warning" in l]
    equal(len(warnings), 2, f"one warning per bad file ({warnings})")
    check(any("stuck.jsonl: cannot read: not a regular file" in w for w in warnings), "the FIFO named", str(warnings))
    check(any("node-a-pid41.log: 1 line not Inspector JSON records" in w for w in warnings), "the bad line named", str(warnings))
