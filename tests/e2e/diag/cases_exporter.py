"""smddp-diag exporter scraped by a real Prometheus, linted by promtool, under 200 concurrent scrapes."""

import concurrent.futures
import json
import os
import re
import subprocess
import urllib.parse

import fixtures
from harness import ARGS, HOST, Server, case, check, diag, equal, free_port, http_get, nvml_env, wait_for


def start_exporter(tmp, name, args, env=None):
    port_file = os.path.join(tmp, name + ".port")
    full_env = dict(os.environ)
    full_env.update(env or {})
    server = Server([ARGS.bin, "exporter", "--listen", "127.0.0.1:0", "--port-file", port_file, "--exit-after", "150", *args],
                    env=full_env, log=os.path.join(tmp, name + ".log"))
    port = wait_for(f"{name} port file", lambda: open(port_file).read().strip() if os.path.exists(port_file) else None)
    return server, int(port)


def promql(port, query):
    _, body = http_get(f"http://127.0.0.1:{port}/api/v1/query?" + urllib.parse.urlencode({"query": query}))
    result = json.loads(body)["data"]["result"]
    return {tuple(sorted((k, v) for k, v in r["metric"].items() if k not in ("instance", "job", "__name__"))): float(r["value"][1]) for r in result}


@case
def exporter_prometheus(tmp):
    root = os.path.join(tmp, "root")
    fixtures.write_sysfs(root, efa=2, proc=dict(user=1000, system=500, idle=8500, mem_total_kb=16777216, mem_available_kb=4194304))
    report = os.path.join(tmp, "preflight.json")
    diag("preflight", "--profile", "p4d.24xlarge", "--checks", "gpu_count,gpu_temperature", "--json", report,
         env=nvml_env(temp="40,95"), check_rc=1)
    servers = []
    try:
        fake, fake_port = start_exporter(tmp, "fake", ["--sysfs-root", root, "--interval", "0.2", "--preflight-report", report],
                                         env=nvml_env(count=2, temp="41,77", util="30,60", mem_used="1000,2000", power_mw="65500,300000"))
        servers.append(fake)
        real, real_port = start_exporter(tmp, "real", ["--interval", "0.5"])
        servers.append(real)
        # promtool on both /metrics bodies, EFA counters included: clean.
        _, body = http_get(f"http://127.0.0.1:{fake_port}/metrics")
        if "smddp_efa_hw_counters_total" not in body:
            raise AssertionError("no EFA counters in the scrape")
        lint = subprocess.run([ARGS.promtool, "check", "metrics"], input=body, capture_output=True, text=True)
        equal((lint.returncode, lint.stdout + lint.stderr), (0, ""), "promtool check metrics with EFA counters")
        _, body = http_get(f"http://127.0.0.1:{real_port}/metrics")
        lint = subprocess.run([ARGS.promtool, "check", "metrics"], input=body, capture_output=True, text=True)
        equal((lint.returncode, lint.stdout + lint.stderr), (0, ""), "promtool check metrics on this host's exporter")
        _, body = http_get(f"http://127.0.0.1:{real_port}/metrics")
        with open("/proc/meminfo") as f:
            total = int(re.search(r"MemTotal:\s+(\d+)", f.read()).group(1)) * 1024
        check(f"smddp_node_memory_total_bytes {total}" in body or f"smddp_node_memory_total_bytes {float(total):g}" in body
              or re.search(r"smddp_node_memory_total_bytes %s(\.0)?$" % total, body, re.M), "real MemTotal exported", body)

        prom_port = free_port()
        config = os.path.join(tmp, "prometheus.yml")
        with open(config, "w") as f:
            f.write("global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\nscrape_configs:\n"
                    f"  - job_name: smddp-diag\n    static_configs:\n      - targets: ['127.0.0.1:{fake_port}']\n")
        prom = Server([ARGS.prometheus, f"--config.file={config}", f"--storage.tsdb.path={tmp}/tsdb",
                       f"--web.listen-address=127.0.0.1:{prom_port}", "--log.level=warn"], log=os.path.join(tmp, "prometheus.log"))
        servers.append(prom)
        wait_for("Prometheus ready", lambda: http_get(f"http://127.0.0.1:{prom_port}/-/ready")[0] == 200)
        wait_for("a successful scrape", lambda: promql(prom_port, 'up{job="smddp-diag"}') == {(): 1.0}, timeout=30)

        def value(q):
            return wait_for(q, lambda: promql(prom_port, q) or None, timeout=20)

        equal(value("smddp_node_memory_total_bytes"), {(): 16777216 * 1024.0}, "memory total")
        equal(value("smddp_node_memory_used_bytes"), {(): (16777216 - 4194304) * 1024.0}, "memory used")
        equal(value("smddp_node_cpu_utilization_ratio"), {(): 0.15}, "CPU since boot (1500 of 10000 jiffies busy)")
        g0 = (("busid", "0000:10:1c.0"), ("gpu", "0"), ("uuid", "GPU-fake-0000"))
        g1 = (("busid", "0000:10:1d.0"), ("gpu", "1"), ("uuid", "GPU-fake-0001"))
        equal(value("smddp_gpu_temperature_celsius"), {g0: 41.0, g1: 77.0}, "GPU temperature")
        equal(value("smddp_gpu_utilization_ratio"), {g0: 0.3, g1: 0.6}, "GPU utilization")
        equal(value("smddp_gpu_memory_used_bytes"), {g0: 1000.0, g1: 2000.0}, "GPU memory used")
        equal(value("smddp_gpu_power_watts"), {g0: 65.5, g1: 300.0}, "GPU power")
        efa = value("smddp_efa_hw_counters_total")
        equal(len(efa), 2 * (len(fixtures.COUNTERS) - 1), "EFA counter series (lifespan excluded)")
        key = (("counter", "tx_bytes"), ("device", fixtures.EFA_NAMES[1]), ("port", "1"))
        equal(efa[key], float(fixtures.counter_value(1, "tx_bytes")), "EFA tx_bytes")
        equal(value("smddp_preflight_healthy"), {(): 0.0}, "preflight unhealthy")
        # A failed check's series carries its failure code and action (docs/diag.md, "Failure codes").
        failed = (("action", "escalate"), ("check", "gpu_temperature"), ("code", "SMDDP-PREFLIGHT-GPU-TEMPERATURE"))
        equal(value("smddp_preflight_check_healthy"), {(("check", "gpu_count"),): 1.0, failed: 0.0},
              "preflight per check")
        info = value("smddp_diag_info")
        equal([dict(k) for k in info], [{"gpus": "2", "host": HOST, "nvml": "available", "version": "0.1.0"}], "info labels")

        # Values move: more CPU work, more EFA traffic, a new preflight report.
        fixtures.write_proc(root, user=1000 + 100, system=500, idle=8500 + 300, mem_total_kb=16777216, mem_available_kb=4194304)
        fixtures.set_counter(root, 1, "tx_bytes", fixtures.counter_value(1, "tx_bytes") + 5000)
        diag("preflight", "--profile", "p4d.24xlarge", "--checks", "gpu_count,gpu_temperature", "--json", report,
             env=nvml_env(), check_rc=0)
        wait_for("CPU ratio 0.25", lambda: promql(prom_port, "smddp_node_cpu_utilization_ratio") == {(): 0.25}, timeout=20)
        wait_for("tx_bytes +5000", lambda: promql(prom_port, f'smddp_efa_hw_counters_total{{device="{fixtures.EFA_NAMES[1]}",counter="tx_bytes"}}')
                 == {(("counter", "tx_bytes"), ("device", fixtures.EFA_NAMES[1]), ("port", "1")): fixtures.counter_value(1, "tx_bytes") + 5000.0},
                 timeout=20)
        wait_for("preflight healthy", lambda: promql(prom_port, "smddp_preflight_healthy") == {(): 1.0}, timeout=20)

        # 200 concurrent scrapes, 50 at a time, none may fail.
        def scrape(_):
            status, body = http_get(f"http://127.0.0.1:{fake_port}/metrics", timeout=20)
            return status == 200 and "smddp_node_memory_total_bytes 17179869184" in body and body.rstrip().endswith(("1", "0"))
        with concurrent.futures.ThreadPoolExecutor(max_workers=50) as pool:
            results = list(pool.map(scrape, range(200)))
        equal(results.count(True), 200, "successful concurrent scrapes")
        check(fake.proc.poll() is None, "the exporter survived the scrapes")
        equal(promql(prom_port, 'up{job="smddp-diag"}'), {(): 1.0}, "Prometheus still scrapes")
    finally:
        codes = [s.stop() for s in reversed(servers)]
    equal(codes[-2:], [0, 0], "exporters exit 0 on SIGTERM")
