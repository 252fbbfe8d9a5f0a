#!/usr/bin/env python3
"""End-to-end tests of smddp-bench's metrics export against real servers.

Usage: telemetry_e2e.py --bench PATH --mpirun PATH --source-dir DIR TEST

Each TEST is its own CTest test. Servers (prometheus, prometheus-pushgateway)
and listeners run on 127.0.0.1 on ports chosen free at run time, are started
by the test and stopped even when it fails. Every wait has a deadline.
"""
import argparse
import contextlib
import glob
import json
import math
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
import urllib.request

ARGS = None
SWEEP = ["allreduce", "-b", "1K", "-e", "64K", "-f", "4", "-n", "5", "-w", "1"]
SIZES = {1024, 4096, 16384, 65536}
CLOUDWATCH_UNITS = {
    "Seconds", "Microseconds", "Milliseconds", "Bytes", "Kilobytes", "Megabytes", "Gigabytes", "Terabytes",
    "Bits", "Kilobits", "Megabits", "Gigabits", "Terabits", "Percent", "Count", "Bytes/Second",
    "Kilobytes/Second", "Megabytes/Second", "Gigabytes/Second", "Terabytes/Second", "Bits/Second",
    "Kilobits/Second", "Megabits/Second", "Gigabits/Second", "Terabits/Second", "Count/Second", "None"}
ROW_LABELS = ("collective", "dtype", "op", "size", "backend", "algorithm", "placement")


class Failure(Exception):
    pass


def check(condition, message):
    if not condition:
        raise Failure(message)


# ---------------------------------------------------------------- helpers

def free_port(host="127.0.0.1"):
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def ipv6_loopback():
    try:
        free_port("::1")
        return True
    except OSError:
        return False


def refused(host, port):
    """True when nothing listens on host:port (the bench bound another address)."""
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as s:
        s.settimeout(5)
        try:
            s.connect((host, port))
            return False
        except ConnectionRefusedError:
            return True


def mpirun(np, *bench_args):
    return [ARGS.mpirun, "--oversubscribe", "--bind-to", "none", "-np", str(np), ARGS.bench, *bench_args]


def run(cmd, timeout=120):
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)


def http_get(url, timeout=5):
    with urllib.request.urlopen(url, timeout=timeout) as response:
        return response.read().decode()


def wait_for(what, predicate, timeout=30, interval=0.2):
    deadline = time.monotonic() + timeout
    last_error = None
    while time.monotonic() < deadline:
        try:
            value = predicate()
            if value:
                return value
        except Exception as e:  # the server is not up yet
            last_error = e
        time.sleep(interval)
    raise Failure(f"timed out waiting for {what} (last error: {last_error})")


@contextlib.contextmanager
def server(name, cmd, ready_url, workdir):
    """Starts a server in its own process group; stops the group on exit."""
    log_path = os.path.join(workdir, name + ".log")
    log = open(log_path, "w")
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        wait_for(f"{name} at {ready_url}", lambda: proc.poll() is None and http_get(ready_url) is not None,
                 timeout=30)
        yield proc
    except Failure:
        log.flush()
        with open(log_path) as f:
            print(f"--- {name} log\n{f.read()[-3000:]}")
        raise
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=10)
        log.close()


def prometheus_server(workdir, bench_port):
    port = free_port()
    config = os.path.join(workdir, "prometheus.yml")
    with open(config, "w") as f:
        f.write("global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
                "scrape_configs:\n  - job_name: smddp-bench\n    static_configs:\n"
                f"      - targets: ['127.0.0.1:{bench_port}']\n")
    cmd = [shutil.which("prometheus") or "prometheus", f"--config.file={config}",
           f"--storage.tsdb.path={os.path.join(workdir, 'tsdb')}", f"--web.listen-address=127.0.0.1:{port}"]
    return server("prometheus", cmd, f"http://127.0.0.1:{port}/-/ready", workdir), port


def pushgateway_server(workdir):
    port = free_port()
    cmd = [shutil.which("prometheus-pushgateway") or "prometheus-pushgateway",
           f"--web.listen-address=127.0.0.1:{port}"]
    return server("pushgateway", cmd, f"http://127.0.0.1:{port}/-/ready", workdir), port


def prom_query(port, query):
    url = f"http://127.0.0.1:{port}/api/v1/query?" + urllib.parse.urlencode({"query": query})
    reply = json.loads(http_get(url))
    check(reply["status"] == "success", f"query {query}: {reply}")
    return reply["data"]["result"]


def load_rows(path):
    with open(path) as f:
        doc = json.load(f)
    check(doc.get("complete") is True, f"{path} is not complete")
    return doc, doc["rows"]


def row_key(row):
    """The Prometheus row labels of a JSON result row."""
    return (row["collective"], row["dtype"], row["op"], str(row["bytes"]), row["backend"], row["algorithm"],
            row["placement"])


def label_key(labels):
    return tuple(labels[name] for name in ROW_LABELS)


def close(a, b, rel=1e-9):
    return math.isclose(float(a), float(b), rel_tol=rel, abs_tol=1e-12)


def parse_exposition(text):
    """Text exposition -> {sample name: [(labels dict, value)]}."""
    samples = {}
    sample_re = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})?\s+(\S+)')
    label_re = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = sample_re.match(line)
        check(m is not None, f"unparsable exposition line: {line}")
        labels = dict(label_re.findall(m.group(3) or ""))
        samples.setdefault(m.group(1), []).append((labels, float(m.group(4))))
    return samples


def check_rows_against(samples, name, rows, field, scale):
    """Every JSON row has exactly one sample of `name` with value row[field] * scale."""
    by_key = {}
    for labels, value in samples.get(name, []):
        by_key[label_key(labels)] = value
    check(len(by_key) == len(rows), f"{name}: {len(by_key)} series for {len(rows)} rows")
    for row in rows:
        key = row_key(row)
        check(key in by_key, f"{name}: no series for {key}")
        want = (row[field] or 0) * scale
        check(close(by_key[key], want), f"{name}{key} = {by_key[key]}, JSON says {want}")


def check_json_rows(rows, backends=("smddp",)):
    check(len(rows) >= len(SIZES), f"{len(rows)} rows")
    check({r["bytes"] for r in rows} == SIZES, f"sizes {sorted({r['bytes'] for r in rows})}")
    check({r["backend"] for r in rows} <= set(backends), f"backends {set(r['backend'] for r in rows)}")
    for r in rows:
        check(r["busbw_gbps"] > 0 and r["time_us"] > 0, f"row without a measurement: {r}")
        check(r["wrong"] == 0, f"wrong values in {r}")


def warnings_in(stderr):
    return [line for line in stderr.splitlines() if line.startswith("smddp-bench: warning:")]


def metric_names_in(path):
    with open(path) as f:
        return set(re.findall(r"\bsmddp_[a-z0-9_]+", f.read()))


def diag_metric_names():
    """Names listed in docs/metrics.md's smddp-diag exporter section."""
    with open(os.path.join(ARGS.source_dir, "docs", "metrics.md")) as f:
        text = f.read()
    m = re.search(r"^## smddp-diag exporter metrics$(.*?)^## ", text, re.S | re.M)
    check(m is not None, "docs/metrics.md has no '## smddp-diag exporter metrics' section")
    return set(re.findall(r"`(smddp_[a-z0-9_]+)`", m.group(1)))


class UdpCollector:
    """Receives datagrams on 127.0.0.1 from a thread until stopped."""

    def __init__(self):
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.settimeout(0.2)
        self.port = self.sock.getsockname()[1]
        self.datagrams = []
        self.stopping = False
        self.thread = threading.Thread(target=self._receive, daemon=True)
        self.thread.start()

    def _receive(self):
        while not self.stopping:
            try:
                self.datagrams.append(self.sock.recv(65536))
            except socket.timeout:
                continue

    def close(self):
        self.stopping = True
        self.thread.join(timeout=5)
        self.sock.close()


def emf_violations(doc):
    """The EMF specification's rules, checked independently of the library."""
    errors = []
    aws = doc.get("_aws")
    if not isinstance(aws, dict):
        return ["no _aws object"]
    ts = aws.get("Timestamp")
    now_ms = time.time() * 1000
    if not isinstance(ts, int) or abs(ts - now_ms) > 600_000:
        errors.append(f"_aws.Timestamp {ts} is not now in milliseconds")
    directives = aws.get("CloudWatchMetrics")
    if not isinstance(directives, list) or not directives:
        return errors + ["CloudWatchMetrics is not a non-empty array"]
    for d in directives:
        if not isinstance(d.get("Namespace"), str) or not d["Namespace"]:
            errors.append("no Namespace")
        dims = d.get("Dimensions")
        if not isinstance(dims, list) or not all(isinstance(s, list) for s in dims):
            errors.append("Dimensions is not an array of arrays")
        else:
            for s in dims:
                if len(s) > 30:
                    errors.append("more than 30 dimensions in a set")
                for key in s:
                    if not isinstance(doc.get(key), str) or not doc[key]:
                        errors.append(f"dimension {key} is not a string member")
        metrics = d.get("Metrics")
        if not isinstance(metrics, list) or len(metrics) > 100:
            errors.append("Metrics is not an array of at most 100")
            continue
        for m in metrics:
            name = m.get("Name")
            if not isinstance(name, str):
                errors.append("metric without Name")
                continue
            if "Unit" in m and m["Unit"] not in CLOUDWATCH_UNITS:
                errors.append(f"{name}: unit {m['Unit']} is not a CloudWatch unit")
            if not isinstance(doc.get(name), (int, float)) or isinstance(doc.get(name), bool):
                errors.append(f"{name}: no numeric member")
    return errors


# ---------------------------------------------------------------- tests

def test_scrape():
    """A real Prometheus scrapes a sweep with --linger: its series match -J; promtool accepts a scrape;
    every metric name the dashboards and rules use is in that scrape (or is smddp-diag's, per docs)."""
    with tempfile.TemporaryDirectory() as d:
        bench_port = free_port()
        prom, prom_port = prometheus_server(d, bench_port)
        out = os.path.join(d, "out.json")
        with prom:
            # Prometheus applies its targets up to 5 s after start: wait for its
            # first scrape attempt (up == 0, nothing listens yet), or a quick
            # sweep and its linger can pass unseen.
            wait_for("Prometheus to try the target once", lambda: prom_query(prom_port, "up"), timeout=30)
            cmd = mpirun(2, *SWEEP, "--per-iteration", "-J", out, "--prom-port", str(bench_port), "--linger", "5")
            bench = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                     start_new_session=True)
            try:
                # Our own scrape while the bench lingers with its final values.
                def lingering():
                    with open(out) as f:
                        return json.load(f).get("complete") is True
                wait_for("the sweep to complete", lingering, timeout=60)
                scrape = http_get(f"http://127.0.0.1:{bench_port}/metrics")
                stdout, stderr = bench.communicate(timeout=60)
            finally:
                if bench.poll() is None:
                    os.killpg(bench.pid, signal.SIGKILL)
                    bench.wait(timeout=10)
            check(bench.returncode == 0, f"smddp-bench exit {bench.returncode}\n{stdout[-2000:]}\n{stderr[-2000:]}")
            check(warnings_in(stderr) == [], f"warnings: {warnings_in(stderr)}")
            doc, rows = load_rows(out)
            check_json_rows(rows)

            # 1. The scrape itself: promtool's lint, and values equal to the JSON rows.
            scrape_path = os.path.join(d, "scrape.txt")
            with open(scrape_path, "w") as f:
                f.write(scrape)
            with open(scrape_path) as f:
                lint = subprocess.run(["promtool", "check", "metrics"], stdin=f, capture_output=True, text=True,
                                      timeout=30)
            check(lint.returncode == 0, f"promtool check metrics:\n{lint.stdout}{lint.stderr}")
            samples = parse_exposition(scrape)
            check_rows_against(samples, "smddp_bench_busbw_bytes_per_second", rows, "busbw_gbps", 1e9)
            check_rows_against(samples, "smddp_bench_algbw_bytes_per_second", rows, "algbw_gbps", 1e9)
            check_rows_against(samples, "smddp_bench_time_seconds", rows, "time_us", 1e-6)
            check_rows_against(samples, "smddp_bench_wrong_values_total", rows, "wrong", 1)
            check_rows_against(samples, "smddp_bench_iterations_total", rows, "iterations", 1)
            p99 = [(l, v) for l, v in samples.get("smddp_bench_latency_seconds", []) if l.get("quantile") == "0.99"]
            check_rows_against({"p99": p99}, "p99", [dict(r, p99=r["per_iteration"]["p99_us"]) for r in rows],
                               "p99", 1e-6)
            info = samples["smddp_bench_info"]
            check(len(info) == 1 and info[0][1] == 1 and info[0][0]["nranks"] == "2", f"info {info}")
            check(samples["smddp_bench_exit_code"] == [({}, 0.0)], f"exit code {samples.get('smddp_bench_exit_code')}")

            # 2. What Prometheus stored (the target is gone now: last_over_time reads past the stale marker).
            def final_values_scraped():
                return prom_query(prom_port, "last_over_time(smddp_bench_exit_code[5m])")
            wait_for("Prometheus to hold a scrape from after the sweep", final_values_scraped, timeout=15)
            for name, field, scale in [("smddp_bench_busbw_bytes_per_second", "busbw_gbps", 1e9),
                                       ("smddp_bench_algbw_bytes_per_second", "algbw_gbps", 1e9),
                                       ("smddp_bench_wrong_values_total", "wrong", 1),
                                       ("smddp_bench_iterations_total", "iterations", 1)]:
                result = prom_query(prom_port, f"last_over_time({name}[5m])")
                stored = {name: [(r["metric"], float(r["value"][1])) for r in result]}
                check(all(r["metric"]["job"] == "smddp-bench" and r["metric"]["instance"] == f"127.0.0.1:{bench_port}"
                          for r in result), f"{name}: job/instance labels {[r['metric'] for r in result][:2]}")
                check_rows_against(stored, name, rows, field, scale)
            up = prom_query(prom_port, "max_over_time(up[5m])")
            check(up and up[0]["value"][1] == "1", f"up {up}")

        # 3. Every metric name in dashboards/ and the rules is in this scrape or is smddp-diag's.
        scraped = set(samples)
        diag = diag_metric_names()
        files = glob.glob(os.path.join(ARGS.source_dir, "dashboards", "**", "*.json"), recursive=True) + \
            glob.glob(os.path.join(ARGS.source_dir, "dashboards", "prometheus", "*.yml"))
        check(len(files) >= 4, f"dashboards found: {files}")
        used = set()
        for path in files:
            names = metric_names_in(path)
            unknown = names - scraped - diag
            check(not unknown, f"{os.path.relpath(path, ARGS.source_dir)} uses metrics nobody exports: {sorted(unknown)}")
            used |= names
        check(used & scraped and used & diag, "the dashboards use both bench and node metrics")
        print(f"{len(rows)} rows match in the scrape and in Prometheus; {len(used)} dashboard/rule metric names "
              f"found ({len(used & diag)} from smddp-diag)")


def test_push():
    """A real Pushgateway receives --pushgateway results grouped by job and instance."""
    with tempfile.TemporaryDirectory() as d:
        gateway, port = pushgateway_server(d)
        out = os.path.join(d, "out.json")
        with gateway:
            r = run(mpirun(2, *SWEEP, "-J", out, "--pushgateway", f"http://127.0.0.1:{port}", "--job", "e2e-push",
                           "--instance", "node e2e/1"))
            check(r.returncode == 0, f"exit {r.returncode}\n{r.stdout[-2000:]}\n{r.stderr[-2000:]}")
            check(warnings_in(r.stderr) == [], f"warnings: {warnings_in(r.stderr)}")
            _, rows = load_rows(out)
            check_json_rows(rows)

            groups = json.loads(http_get(f"http://127.0.0.1:{port}/api/v1/metrics"))["data"]
            mine = [g for g in groups if g["labels"].get("job") == "e2e-push"]
            check(len(mine) == 1, f"groups: {[g['labels'] for g in groups]}")
            group = mine[0]
            check(group["labels"]["instance"] == "node e2e/1", f"grouping key {group['labels']}")
            check(group["last_push_successful"] is True, "last push failed")
            for name, field, scale in [("smddp_bench_busbw_bytes_per_second", "busbw_gbps", 1e9),
                                       ("smddp_bench_algbw_bytes_per_second", "algbw_gbps", 1e9),
                                       ("smddp_bench_iterations_total", "iterations", 1)]:
                check(name in group, f"{name} not pushed; have {sorted(k for k in group if k.startswith('smddp'))}")
                stored = {name: [(m["labels"], float(m["value"])) for m in group[name]["metrics"]]}
                check_rows_against(stored, name, rows, field, scale)
            exit_code = group["smddp_bench_exit_code"]["metrics"]
            check([float(m["value"]) for m in exit_code] == [0.0], f"final push: exit code {exit_code}")

            # The gateway's own exposition agrees and passes promtool.
            exposition = http_get(f"http://127.0.0.1:{port}/metrics")
            samples = parse_exposition(exposition)
            busbw = [(l, v) for l, v in samples["smddp_bench_busbw_bytes_per_second"] if l.get("job") == "e2e-push"]
            check_rows_against({"b": busbw}, "b", rows, "busbw_gbps", 1e9)
            lint = subprocess.run(["promtool", "check", "metrics"], input=exposition, capture_output=True,
                                  text=True, timeout=30)
            check(lint.returncode == 0, f"promtool on the gateway:\n{lint.stdout}{lint.stderr}")
        print(f"{len(rows)} rows read back from the Pushgateway group job=e2e-push")


def test_emf():
    """EMF over UDP: one document per row, valid per the specification, values equal to -J; the
    CloudWatch dashboard uses only metrics and the namespace the documents carry."""
    collector = UdpCollector()
    try:
        with tempfile.TemporaryDirectory() as d:
            out = os.path.join(d, "out.json")
            r = run(mpirun(2, *SWEEP, "--per-iteration", "-J", out, "--emf", f"udp://127.0.0.1:{collector.port}",
                           "--instance", "emf-node"))
            check(r.returncode == 0, f"exit {r.returncode}\n{r.stdout[-2000:]}\n{r.stderr[-2000:]}")
            _, rows = load_rows(out)
            check_json_rows(rows)
            wait_for("every EMF datagram", lambda: len(collector.datagrams) >= len(rows), timeout=5)
    finally:
        collector.close()
    docs = [json.loads(datagram) for datagram in collector.datagrams]
    check(len(docs) == len(rows), f"{len(docs)} documents for {len(rows)} rows")
    metric_names = set()
    for doc in docs:
        errors = emf_violations(doc)
        check(not errors, f"EMF violations {errors} in {doc}")
        directive = doc["_aws"]["CloudWatchMetrics"][0]
        check(directive["Namespace"] == "SMDDP/Bench", f"namespace {directive['Namespace']}")
        metric_names |= {m["Name"] for m in directive["Metrics"]}
        check(doc["Host"] == "emf-node", f"Host {doc.get('Host')}")
    by_key = {(d["Collective"], d["DataType"], d["Op"], d["Size"], d["Backend"], d["Algorithm"], d["Placement"]): d
              for d in docs}
    for row in rows:
        doc = by_key.get(row_key(row))
        check(doc is not None, f"no EMF document for {row_key(row)}")
        check(close(doc["BusBandwidth"], row["busbw_gbps"]), f"BusBandwidth {doc['BusBandwidth']} vs {row}")
        check(close(doc["AlgBandwidth"], row["algbw_gbps"]), f"AlgBandwidth {doc['AlgBandwidth']} vs {row}")
        check(close(doc["Time"], row["time_us"]), f"Time {doc['Time']} vs {row}")
        check(close(doc["LatencyP99"], row["per_iteration"]["p99_us"]), f"LatencyP99 vs {row}")
        check(doc["WrongValues"] == row["wrong"] and doc["Iterations"] == row["iterations"], f"counts vs {row}")
        check(doc["Bytes"] == row["bytes"], f"Bytes vs {row}")

    with open(os.path.join(ARGS.source_dir, "dashboards", "cloudwatch", "bench.json")) as f:
        body = f.read()
    json.loads(body)
    used = set(re.findall(r'MetricName=\\"(\w+)\\"', body))
    namespaces = set(re.findall(r"SEARCH\('\{([^,}]+)", body))
    check(used, "no SEARCH expressions found in the CloudWatch dashboard")
    check(namespaces == {"SMDDP/Bench"}, f"dashboard namespaces {namespaces}")
    check(used - {"Timeouts"} <= metric_names, f"dashboard metrics not in EMF documents: {used - metric_names}")
    print(f"{len(docs)} EMF documents valid and equal to the JSON rows")


def test_faults():
    """An unreachable Pushgateway and EMF endpoint: one warning per row and sink, the sweep completes,
    -J is intact."""
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "out.json")
        dead_gateway, dead_agent = free_port(), free_port()
        # run()'s time limit guards against a hang; how long the sweep takes is not asserted.
        r = run(mpirun(2, *SWEEP, "-J", out, "--pushgateway", f"http://127.0.0.1:{dead_gateway}",
                       "--emf", f"tcp://127.0.0.1:{dead_agent}"))
        check(r.returncode == 0, f"exit {r.returncode}\n{r.stdout[-2000:]}\n{r.stderr[-2000:]}")
        _, rows = load_rows(out)
        check_json_rows(rows)
        warnings = warnings_in(r.stderr)
        push = [w for w in warnings if f"push to http://127.0.0.1:{dead_gateway}/" in w]
        emf = [w for w in warnings if f"EMF to tcp://127.0.0.1:{dead_agent}" in w]
        check(len(emf) == len(rows), f"{len(emf)} EMF warnings for {len(rows)} rows:\n{r.stderr}")
        check(len(push) == len(rows) + 1, f"{len(push)} push warnings for {len(rows)} rows + the final push:\n{r.stderr}")
        check(len(warnings) == len(push) + len(emf), f"other warnings:\n{r.stderr}")
        for row in rows:
            tag = f"({row['collective']} {row['backend']} {row['bytes']} B {row['placement']})"
            check(sum(tag in w for w in push) == 1 and sum(tag in w for w in emf) == 1, f"warnings for {tag}")
        print(f"{len(rows)} rows, {len(push)} push and {len(emf)} EMF warnings, JSON complete")


def test_port_in_use():
    """--prom-port on a port in use: exit 64, one line naming the port, before the sweep (no -J file)."""
    with tempfile.TemporaryDirectory() as d, socket.socket() as occupant:
        occupant.bind(("127.0.0.1", 0))
        occupant.listen(1)
        port = occupant.getsockname()[1]
        out = os.path.join(d, "out.json")
        r = run(mpirun(2, *SWEEP, "-J", out, "--prom-port", str(port)), timeout=60)
        lines = [l for l in r.stderr.splitlines() if l.startswith("smddp-bench")]
        check(r.returncode == 64, f"exit {r.returncode}, want 64\n{r.stdout[-1000:]}\n{r.stderr[-2000:]}")
        check(len(lines) == 1 and f"127.0.0.1:{port}" in lines[0] and "in use" in lines[0],
              f"want one line naming 127.0.0.1:{port} in use, got {lines}")
        check(not os.listdir(d), f"files written before the error: {os.listdir(d)}")
        check(not any(l.strip() and not l.startswith("#") for l in r.stdout.splitlines()),
              f"result rows printed:\n{r.stdout}")
        # And the malformed flags, each refused the same way.
        for args, needle in [(["--pushgateway", "127.0.0.1:9091"], "--pushgateway"),
                             (["--emf", "udp://127.0.0.1:99999"], "--emf"),
                             (["--prom-port", str(free_port()), "--prom-bind", "300.1.1.1"], "bind address"),
                             (["--emf", os.path.join(d, "missing-dir", "x.log")], "--emf")]:
            r = run(mpirun(2, *SWEEP, "-J", out, *args), timeout=60)
            lines = [l for l in r.stderr.splitlines() if l.startswith("smddp-bench")]
            check(r.returncode == 64 and len(lines) == 1 and needle in lines[0],
                  f"{args}: exit {r.returncode}, lines {lines}\n{r.stderr[-1500:]}")
            check(not os.listdir(d), f"{args}: files written: {os.listdir(d)}")
        print(f"port {port} in use and 4 malformed flags refused with exit 64")


def test_bind():
    """--prom-bind 127.0.0.1, ::1, [::1] and localhost: one smddp-bench (no mpirun) serves /metrics on exactly
    that address while it runs (the ::1 cases need IPv6 on loopback; without it they are left out)."""
    cases = [("127.0.0.1", "127.0.0.1"), ("localhost", "localhost")]
    if ipv6_loopback():
        cases += [("::1", "::1"), ("[::1]", "::1")]
    else:
        print("no IPv6 on loopback: ::1 cases left out")
    for bind, host in cases:
        port = free_port("::1" if host == "::1" else "127.0.0.1")
        url = f"http://{'[::1]' if host == '::1' else host}:{port}/metrics"
        with tempfile.TemporaryDirectory() as d:
            out = os.path.join(d, "out.json")
            cmd = [ARGS.bench, *SWEEP, "-J", out, "--prom-port", str(port), "--prom-bind", bind, "--linger", "3"]
            bench = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                     start_new_session=True)
            try:
                # The final values, scraped while the bench lingers.
                def final_scrape():
                    text = http_get(url)
                    return text if "smddp_bench_exit_code 0" in text else None
                scrape = wait_for(f"{url} with the exit code", final_scrape, timeout=90)
                # Exactly the address given: not the other loopback family as well.
                if host == "::1":
                    check(refused("127.0.0.1", port), f"--prom-bind {bind} also serves 127.0.0.1:{port}")
                elif host == "127.0.0.1" and ipv6_loopback():
                    check(refused("::1", port), f"--prom-bind {bind} also serves [::1]:{port}")
                stdout, stderr = bench.communicate(timeout=60)
            finally:
                if bench.poll() is None:
                    os.killpg(bench.pid, signal.SIGKILL)
                    bench.wait(timeout=10)
            check(bench.returncode == 0, f"--prom-bind {bind}: exit {bench.returncode}\n{stderr[-2000:]}")
            _, rows = load_rows(out)
            samples = parse_exposition(scrape)
            check_rows_against(samples, "smddp_bench_busbw_bytes_per_second", rows, "busbw_gbps", 1e9)
            print(f"--prom-bind {bind}: {url} served {len(rows)} rows and the exit code")


def test_rules():
    """promtool check rules, and promtool test rules: each alert fires on the series meant to fire it."""
    rules = os.path.join(ARGS.source_dir, "dashboards", "prometheus", "smddp.rules.yml")
    r = run(["promtool", "check", "rules", rules], timeout=30)
    check(r.returncode == 0 and "SUCCESS: 9 rules found" in r.stdout, f"check rules:\n{r.stdout}{r.stderr}")
    here = os.path.dirname(os.path.abspath(__file__))
    r = subprocess.run(["promtool", "test", "rules", "smddp.rules.test.yml"], cwd=here, capture_output=True,
                       text=True, timeout=30)
    check(r.returncode == 0 and "SUCCESS" in r.stdout, f"test rules:\n{r.stdout}{r.stderr}")
    for path in glob.glob(os.path.join(ARGS.source_dir, "dashboards", "**", "*.json"), recursive=True):
        with open(path) as f:
            doc = json.load(f)
        if "grafana" in path:
            variables = {v["name"]: v for v in doc["templating"]["list"]}
            check(variables.get("datasource", {}).get("type") == "datasource", f"{path}: no datasource variable")
            check("instance" in variables, f"{path}: no instance variable")
            for panel in doc["panels"]:
                check(panel["datasource"]["uid"] == "${datasource}", f"{path}: panel {panel['title']} ignores $datasource")
    print("rules valid and their unit tests pass; dashboards carry their variables")


def main():
    global ARGS
    parser = argparse.ArgumentParser()
    parser.add_argument("--bench", required=True)
    parser.add_argument("--mpirun", required=True)
    parser.add_argument("--source-dir", required=True)
    parser.add_argument("test")
    ARGS = parser.parse_args()
    os.environ.setdefault("OMPI_ALLOW_RUN_AS_ROOT", "1")
    os.environ.setdefault("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
    try:
        globals()["test_" + ARGS.test]()
    except (Failure, subprocess.TimeoutExpired) as e:
        print("FAIL:", e)
        sys.exit(1)
    print("PASS", ARGS.test)


if __name__ == "__main__":
    main()
