#!/usr/bin/env python3
"""Fabric counter deltas from a fake sysfs tree (SMDDP_SYSFS_ROOT) whose
error counters a thread of this test raises while the job runs.

Usage: counters_e2e.py --bench PATH --diag PATH --mpirun PATH TEST
  bench      every -J row carries "fabric_counters"; the moving error counter
             shows up with host, device and port, at most as much as it grew;
             counters that stay still and traffic counters never do; without
             the writer every row's list is empty; /metrics has
             smddp_bench_fabric_delta_total for it
  preflight  smddp-diag preflight under mpirun: "fabric_counters" fails the
             node naming the counter that moved during the checks, passes
             when nothing moved
"""
import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

ARGS = None
HOST = socket.gethostname()
DEVICE = "rdmap16s27"


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


def write(path, value):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path + ".tmp", "w") as f:
        f.write(f"{value}\n")
    os.replace(path + ".tmp", path)


def fake_tree(root):
    port = os.path.join(root, "sys/class/infiniband", DEVICE, "ports/1")
    write(os.path.join(port, "hw_counters/retrans_pkts"), 100)
    write(os.path.join(port, "hw_counters/rx_bytes"), 5000)        # traffic, not an error
    write(os.path.join(port, "hw_counters/link_downed"), 3)        # an error counter that stays still
    write(os.path.join(port, "counters/port_rcv_errors"), 0)
    write(os.path.join(root, "sys/class/infiniband", DEVICE, "hw_counters/impaired_remote_conn_events"), 1)
    return os.path.join(port, "hw_counters")


class Writer:
    """Raises retrans_pkts and rx_bytes by one every millisecond until stopped."""

    def __init__(self, counters):
        self.counters, self.stop, self.grown = counters, threading.Event(), 0
        self.thread = threading.Thread(target=self.run)

    def run(self):
        while not self.stop.wait(0.001):
            self.grown += 1
            write(os.path.join(self.counters, "retrans_pkts"), 100 + self.grown)
            write(os.path.join(self.counters, "rx_bytes"), 5000 + self.grown)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.thread.join()


def bench_rows(root, out):
    cmd = [ARGS.mpirun, "--oversubscribe", "--bind-to", "none", "-np", "2", "-x", "SMDDP_SYSFS_ROOT", ARGS.bench,
           "allreduce", "-b", "8", "-e", "256K", "-f", "2", "-n", "20", "-w", "2", "-J", out]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=240, env={**os.environ, "SMDDP_SYSFS_ROOT": root})
    if r.returncode != 0:
        fail(f"exit {r.returncode}\n{r.stderr}")
    with open(out) as f:
        return json.load(f)["rows"]


def test_bench():
    with tempfile.TemporaryDirectory() as d:
        root = os.path.join(d, "root")
        counters = fake_tree(root)
        with Writer(counters) as writer:
            rows = bench_rows(root, os.path.join(d, "moving.json"))
        seen = 0
        for row in rows:
            if "fabric_counters" not in row:
                fail(f"row without fabric_counters: {row}")
            for c in row["fabric_counters"]:
                if (c["host"], c["device"], c["port"], c["counter"]) != (HOST, DEVICE, 1, "retrans_pkts"):
                    fail(f"a counter that did not move or is no error counter: {c}")
                if c["delta"] <= 0:
                    fail(f"delta {c}")
        per_row = {}
        for row in rows:  # the backends and placements of a row share its deltas
            per_row.setdefault(row["row"], []).append(json.dumps(row["fabric_counters"]))
        for index, lists in per_row.items():
            if len(set(lists)) != 1:
                fail(f"row {index}: different deltas for one row: {lists}")
            seen += sum(c["delta"] for c in json.loads(lists[0]))
        if seen == 0 or seen > writer.grown:
            fail(f"retrans_pkts grew by {writer.grown}; the rows saw {seen}")
        moved = sum(1 for lists in per_row.values() if json.loads(lists[0]))
        print(f"{moved} of {len(per_row)} rows saw retrans_pkts move, {seen} of {writer.grown} increments")
        still = bench_rows(root, os.path.join(d, "still.json"))
        if any(row["fabric_counters"] for row in still):
            fail(f"deltas without a writer: {[row['fabric_counters'] for row in still if row['fabric_counters']]}")
        with Writer(counters):
            metrics = scrape_after_sweep(root)
        series = [l for l in metrics.splitlines() if l.startswith("smddp_bench_fabric_delta_total{")]
        if not series or any('counter="retrans_pkts"' not in l or f'host="{HOST}"' not in l or
                             f'device="{DEVICE}"' not in l or float(l.rsplit(" ", 1)[1]) <= 0 for l in series):
            fail(f"smddp_bench_fabric_delta_total series: {series}")
        print(f"{len(series)} smddp_bench_fabric_delta_total series, e.g. {series[0]}")


def scrape_after_sweep(root):
    """One rank with --prom-port and --linger: /metrics once the sweep is done."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    cmd = [ARGS.bench, "allreduce", "-b", "8", "-e", "256K", "-f", "2", "-n", "50", "-w", "2",
           "--prom-port", str(port), "--prom-bind", "127.0.0.1", "--linger", "20"]
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                         env={**os.environ, "SMDDP_SYSFS_ROOT": root})
    try:
        deadline = time.time() + 120
        while time.time() < deadline and p.poll() is None:
            time.sleep(0.5)
            try:
                text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read().decode()
            except OSError:
                continue
            if "smddp_bench_exit_code" in text:
                return text
        fail(f"no finished sweep on /metrics (exit {p.poll()}): {p.stderr.read() if p.poll() is not None else ''}")
    finally:
        p.kill()
        p.wait()


def preflight(root, report, d):
    profile = os.path.join(d, "cluster.yaml")
    with open(profile, "w") as f:
        f.write("name: counters\nchecks:\n"
                "  rank_reachability: {timeout_s: 20}\n"
                "  allreduce_busbw: {bytes: 4MiB, iterations: 20, min_gbytes_per_s: 0}\n")
    cmd = [ARGS.mpirun, "--oversubscribe", "--bind-to", "none", "-np", "2", "-x", "SMDDP_TIMEOUT", ARGS.diag,
           "--sysfs-root", root, "preflight", "--profile", profile, "--json", report]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=180, env={**os.environ, "SMDDP_TIMEOUT": "60"})
    with open(report) as f:
        j = json.load(f)
    checks = {c["name"]: c for c in j["nodes"][0]["checks"]}
    return r, checks


def test_preflight():
    with tempfile.TemporaryDirectory() as d:
        root = os.path.join(d, "root")
        counters = fake_tree(root)
        with Writer(counters):
            r, checks = preflight(root, os.path.join(d, "moving.json"), d)
        c = checks.get("fabric_counters")
        if r.returncode != 1 or not c or c["status"] != "fail":
            fail(f"exit {r.returncode}, fabric_counters {c}\n{r.stdout}{r.stderr}")
        want = f"{HOST} | ERROR: fabric_counters: moved during the checks: {DEVICE}/1/retrans_pkts +"
        if want not in r.stdout or list(c["values"]["moved"]) != [f"{DEVICE}/1/retrans_pkts"]:
            fail(f"no '{want}' naming only retrans_pkts:\n{r.stdout}\n{c}")
        r, checks = preflight(root, os.path.join(d, "still.json"), d)
        c = checks.get("fabric_counters")
        if r.returncode != 0 or not c or c["status"] != "pass" or c["values"]["watched"] != 4:
            fail(f"nothing moved: exit {r.returncode}, fabric_counters {c}\n{r.stdout}{r.stderr}")
        print(c["reason"])


def main():
    global ARGS
    parser = argparse.ArgumentParser()
    for flag in ("--bench", "--diag", "--mpirun"):
        parser.add_argument(flag, required=True)
    parser.add_argument("test")
    ARGS = parser.parse_args()
    globals()["test_" + ARGS.test]()
    print("PASS", ARGS.test)


if __name__ == "__main__":
    main()
