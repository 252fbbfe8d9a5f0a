"""smddp-diag preflight: the local profile passes; every check fails when it should, naming node and check."""

import json
import os
import re
import subprocess

import fixtures
from harness import ARGS, HOST, case, check, diag, equal, host_has_efa, host_has_nvml, lines_for, local_profile_skips, mpi_env, nvml_env


P4D_NODE_CHECKS = "gpu_count,gpu_model,gpu_ecc,gpu_memory_retirement,gpu_temperature,gpu_throttle,efa_count"


@case
def preflight_local(tmp):
    report, prom, emf = (os.path.join(tmp, n) for n in ("report.json", "preflight.prom", "emf.log"))
    p = diag("preflight", "--profile", "local", *local_profile_skips(), "-v", "--json", report, "--prom-textfile", prom,
             "--emf", emf, check_rc=0)
    equal(lines_for(p.stdout, HOST), [f"{HOST} | Healthy"], "one Healthy line")
    if not host_has_nvml():
        check("0 GPUs (NVML not available" in p.stdout, "says plainly: no GPU", p.stdout)
    if not host_has_efa():
        check("0 EFA devices; any count is accepted" in p.stdout, "says plainly: no EFA", p.stdout)
    with open(report) as f:
        j = json.load(f)
    equal((j["healthy"], j["profile"], len(j["nodes"])), (True, "local", 1), "JSON report")
    statuses = {c["name"]: c["status"] for c in j["nodes"][0]["checks"]}
    equal(statuses["rank_reachability"], "skip", "cluster checks skipped without mpirun")
    equal(statuses["memlock"], "pass", "memlock")
    promtool = subprocess.run([ARGS.promtool, "check", "metrics"], stdin=open(prom), capture_output=True, text=True)
    equal((promtool.returncode, promtool.stdout + promtool.stderr), (0, ""), "promtool check metrics on the textfile")
    text = open(prom).read()
    check(re.search(r"^smddp_preflight_healthy 1$", text, re.M), "textfile: healthy 1", text)
    check('smddp_preflight_check_healthy{check="fabric_provider"} 1' in text, "textfile: per check", text)
    check('check="rank_reachability"' not in text, "textfile: skipped checks absent", text)
    docs = [json.loads(l) for l in open(emf)]
    node_docs = [d for d in docs if "Healthy" in d]
    equal([(d["Host"], d["Healthy"]) for d in node_docs], [(HOST, 1)], "EMF node document")
    equal(node_docs[0]["_aws"]["CloudWatchMetrics"][0]["Namespace"], "SMDDP/Preflight", "EMF namespace")
    check(any(d.get("Check") == "memlock" and d["CheckHealthy"] == 1 for d in docs), "EMF check document", json.dumps(docs[:3]))


@case
def preflight_local_np2(tmp):
    report = os.path.join(tmp, "report.json")
    p = diag("preflight", "--profile", "local", *local_profile_skips(), "--json", report, mpi=2, env=mpi_env(), check_rc=0)
    equal(lines_for(p.stdout, HOST), [f"{HOST} | Healthy"], "one Healthy line for the one node")
    j = json.load(open(report))
    equal((j["healthy"], j["ranks"], len(j["nodes"]), j["nodes"][0]["ranks"]), (True, 2, 1, [0, 1]), "report of 2 ranks on 1 node")
    checks = {c["name"]: c for c in j["nodes"][0]["checks"]}
    equal(checks["rank_reachability"]["status"], "pass", "reachability")
    equal(checks["allreduce_busbw"]["status"], "pass", "allreduce")
    check(checks["allreduce_busbw"]["values"]["busbw_gbs"] > 0.01 and checks["allreduce_busbw"]["values"]["wrong"] == 0,
          "allreduce busbw measured and correct", json.dumps(checks["allreduce_busbw"]))


@case
def preflight_gpu_efa(tmp):
    root = os.path.join(tmp, "root")
    fixtures.write_sysfs(root, efa=4)
    args = ["--sysfs-root", root, "preflight", "--profile", "p4d.24xlarge", "--checks", P4D_NODE_CHECKS]
    p = diag(*args, "-v", env=nvml_env(), check_rc=0)
    equal(lines_for(p.stdout, HOST), [f"{HOST} | Healthy"], "a healthy fake p4d")
    check("gpu_throttle           pass 8 GPUs not throttled" in p.stdout, "throttle pass", p.stdout)
    # A benign throttle reason (idle) is not a failure.
    diag(*args, env=nvml_env(throttle="0x1"), check_rc=0)
    failures = [
        (dict(count=7), "gpu_count: expected 8 GPUs, NVML found 7"),
        (dict(name="NVIDIA A100-SXM4-80GB"), "gpu_model: GPU 0 (0000:10:1c.0) is 'NVIDIA A100-SXM4-80GB', expected a name containing 'A100-SXM4-40GB'"),
        (dict(mem_total=17179869184), "gpu_model: GPU 0 (0000:10:1c.0) has 16 GiB memory (min 39 GiB)"),
        (dict(ecc_volatile="0,0,3,0"), "gpu_ecc: GPU 2 (0000:20:1c.0) has 3 uncorrectable ECC errors (volatile; max 0)"),
        (dict(retired_dbe="0,2,0"), "gpu_memory_retirement: GPU 1 (0000:10:1d.0) has 2 retired pages (2 double-bit; max 0)"),
        (dict(retired_pending="0,0,0,0,0,1,0"), "gpu_memory_retirement: GPU 5 (0000:90:1d.0) has a page retirement pending"),
        (dict(remap_pending="0,0,0,0,1,0"), "gpu_memory_retirement: GPU 4 (0000:90:1c.0) has a row remap pending (reset needed)"),
        (dict(remap_failed="0,0,0,0,0,0,0,1"), "gpu_memory_retirement: GPU 7 (0000:a0:1d.0) failed a row remap"),
        (dict(temp="40,40,40,95,40"), "gpu_temperature: GPU 3 (0000:20:1d.0) at 95 C (max 85 C)"),
        (dict(throttle="0,0,0,0,0,0,0x40,0"), "gpu_throttle: GPU 6 (0000:a0:1c.0) throttled: hw_thermal_slowdown"),
        (dict(fail="nvmlDeviceGetTemperature=15"), "gpu_temperature: GPU 0 (0000:10:1c.0) NVML error: nvmlDeviceGetTemperature: GPU is lost"),
    ]
    for values, want in failures:
        p = diag(*args, env=nvml_env(**values), check_rc=1)
        got = lines_for(p.stdout, HOST)
        check(len(got) == 1 and got[0].startswith(f"{HOST} | ERROR: {want}"), f"FAKE_NVML {values} -> {want}", p.stdout)
    # A failed check's outputs carry its failure code and action (docs/diag.md, "Failure codes").
    report, prom = os.path.join(tmp, "codes.json"), os.path.join(tmp, "codes.prom")
    diag(*args, "--json", report, "--prom-textfile", prom, env=nvml_env(temp="40,40,40,95,40"), check_rc=1)
    node = json.load(open(report))["nodes"][0]
    failed = [c for c in node["checks"] if c["status"] == "fail"]
    equal([(c["name"], c.get("code"), c.get("action")) for c in failed],
          [("gpu_temperature", "SMDDP-PREFLIGHT-GPU-TEMPERATURE", "escalate")], "JSON: the failed check's code and action")
    equal((node.get("code"), node.get("action")), ("SMDDP-PREFLIGHT-GPU-TEMPERATURE", "escalate"), "JSON: the node's code")
    check(all("code" not in c for c in node["checks"] if c["status"] != "fail"), "JSON: passes carry no code", json.dumps(node))
    check('smddp_preflight_check_healthy{action="escalate",check="gpu_temperature",code="SMDDP-PREFLIGHT-GPU-TEMPERATURE"} 0'
          in open(prom).read().splitlines(), "Prometheus: the code and action labels", open(prom).read())
    # No NVML at all on a node that should have GPUs: gpu_count fails, the
    # GPU health checks are skipped (one root cause, not seven).
    p = diag(*args, "-v", env={"SMDDP_NVML_LIBRARY": "libnvidia-ml-absent.so.1"}, check_rc=1)
    equal(lines_for(p.stdout, HOST), [f"{HOST} | ERROR: gpu_count: expected 8 GPUs, found none: NVML not available "
                                      "(libnvidia-ml-absent.so.1: cannot open shared object file: No such file or directory) "
                                      "[SMDDP-PREFLIGHT-GPU-COUNT, reboot]"],
          "missing NVML")
    p = diag(*args, env=nvml_env(init_error=9), check_rc=1)
    check("gpu_count: expected 8 GPUs, found none: NVML not available (nvmlInit failed: Driver Not Loaded)" in p.stdout, "NVML init failure", p.stdout)
    # EFA: a missing device, a port down.
    few = os.path.join(tmp, "few")
    fixtures.write_sysfs(few, efa=3)
    p = diag("--sysfs-root", few, "preflight", "--profile", "p4d.24xlarge", "--checks", "efa_count", check_rc=1)
    equal(lines_for(p.stdout, HOST), [f"{HOST} | ERROR: efa_count: expected 4 EFA devices, found 3: rdmap144s27, rdmap16s27, rdmap32s27 [SMDDP-PREFLIGHT-EFA-COUNT, reboot]"], "3 of 4 EFA")
    down = os.path.join(tmp, "down")
    fixtures.write_sysfs(down, efa=4, down=(1,))
    p = diag("--sysfs-root", down, "preflight", "--profile", "p4d.24xlarge", "--checks", "efa_count", check_rc=1)
    equal(lines_for(p.stdout, HOST), [f"{HOST} | ERROR: efa_count: rdmap32s27 port 1 is DOWN [SMDDP-PREFLIGHT-EFA-COUNT, reboot]"], "EFA port down")


@case
def preflight_node_limits(tmp):
    # memlock: the profile wants unlimited, the process gets 1 MiB.
    p = diag("preflight", "--profile", "p4d.24xlarge", "--checks", "memlock", memlock=1 << 20, check_rc=1)
    equal(lines_for(p.stdout, HOST), [f"{HOST} | ERROR: memlock: locked-memory limit is 1 MiB, the profile wants unlimited (ulimit -l unlimited) [SMDDP-PREFLIGHT-MEMLOCK, config]"], "memlock")
    diag("preflight", "--profile", "local", "--checks", "memlock", memlock=1 << 20, check_rc=0)
    prof = os.path.join(tmp, "impossible.yaml")
    fixtures.write_profile(prof, {"memlock": {"min": "2MiB"}, "shm_size": {"min": "1PiB"}, "disk_free": {"path": tmp, "min": "1PiB"},
                                  "fabric_provider": {"provider": "efa"}})
    p = diag("preflight", "--profile", prof, "-v", memlock=1 << 20, check_rc=1)
    line = lines_for(p.stdout, HOST)
    equal(len(line), 1, "one line for the node")
    for want in ("memlock: locked-memory limit is 1 MiB (min 2 MiB)", "shm_size: /dev/shm has ", "in size (min 1 PiB)",
                 f"disk_free: {tmp} has ", "free (min 1 PiB)",
                 "fabric_provider: libfabric provider efa has no RDM endpoint here (fi_getinfo: No data available); available: "):
        check(want in line[0], f"report names the check and reason: {want}", p.stdout)


def drain_path(tmp):
    bindir = os.path.join(tmp, "bin")
    os.makedirs(bindir, exist_ok=True)
    script = os.path.join(bindir, "scontrol")
    with open(script, "w") as f:
        f.write(f'#!/bin/sh\nprintf "%s\\n" "$@" >> {tmp}/scontrol.calls\n')
    os.chmod(script, 0o755)
    return {"PATH": bindir + os.pathsep + os.environ["PATH"]}


@case
def preflight_drain(tmp):
    env = nvml_env(temp="40,40,95,40")
    env.update(drain_path(tmp))
    calls = os.path.join(tmp, "scontrol.calls")
    args = ["preflight", "--profile", "p4d.24xlarge", "--checks", "gpu_count,gpu_temperature"]
    p = diag(*args, "--print-drain", env=env, check_rc=1)
    want = (f'scontrol update nodename={HOST} state=drain reason="smddp:SMDDP-PREFLIGHT-GPU-TEMPERATURE gpu_temperature: '
            'GPU 2 (0000:20:1c.0) at 95 C (max 85 C)"')
    check(want in p.stdout.splitlines(), "the drain command is printed", p.stdout)
    check(not os.path.exists(calls), "--print-drain never runs scontrol")
    diag(*args, "--drain", env=env, check_rc=1)
    equal(open(calls).read().splitlines(),
          ["update", f"nodename={HOST}", "state=drain", "reason=smddp:SMDDP-PREFLIGHT-GPU-TEMPERATURE gpu_temperature: GPU 2 (0000:20:1c.0) at 95 C (max 85 C)"],
          "scontrol arguments")
    os.remove(calls)
    diag("preflight", "--profile", "local", "--checks", "memlock", "--drain", "--print-drain", env=env, check_rc=0)
    check(not os.path.exists(calls), "healthy nodes are never drained")


@case
def preflight_reachability_np2(tmp):
    prof = os.path.join(tmp, "reach.yaml")
    fixtures.write_profile(prof, {"memlock": {"min": "4KiB"}, "rank_reachability": {"timeout_s": 2},
                                  "allreduce_busbw": {"bytes": "1MiB", "min_gbytes_per_s": 0.001}})
    report = os.path.join(tmp, "r.json")
    p = diag("preflight", "--profile", prof, "--json", report, mpi=[{}, {"SMDDP_DIAG_FAULT": "unreachable"}],
             env=mpi_env(), check_rc=1, timeout=90)
    equal(lines_for(p.stdout, HOST), [f"{HOST} | ERROR: rank_reachability: rank 1 ({HOST}) unreachable: no answer to 1 of 1 ranks [SMDDP-PREFLIGHT-RANK-REACHABILITY, reboot]"],
          "the silent rank is named")
    checks = {c["name"]: c for c in json.load(open(report))["nodes"][0]["checks"]}
    equal((checks["allreduce_busbw"]["status"], checks["allreduce_busbw"]["reason"]),
          ("skip", "skipped: rank_reachability failed"), "later cluster checks skipped")
    equal(checks["memlock"]["status"], "pass", "node checks still reported")


@case
def preflight_cluster_np2(tmp):
    # Two ranks as two virtual nodes: rank 1's clock runs 500 ms ahead, and the
    # bandwidth floors are impossible.
    prof = os.path.join(tmp, "cluster.yaml")
    fixtures.write_profile(prof, {
        "rank_reachability": {"timeout_s": 10},
        "clock_skew": {"max_ms": 100},
        "allreduce_busbw": {"bytes": "1MiB", "iterations": 3, "min_gbytes_per_s": 1000000},
        "link_bandwidth": {"provider": "tcp", "bytes": "256KiB", "window": 4, "iterations": 2, "min_gbytes_per_s": 1000000}})
    report, prom = os.path.join(tmp, "r.json"), os.path.join(tmp, "node.prom")
    p = diag("preflight", "--profile", prof, "--json", report, "--print-drain",
             mpi=[{}, {"SMDDP_DIAG_FAULT": "clock_offset_ms=500"}], env=mpi_env({"SMDDP_RANKS_PER_NODE": "1"}),
             check_rc=1, timeout=120)
    n0, n1 = f"{HOST}#0", f"{HOST}#1"
    l0, l1 = lines_for(p.stdout, n0), lines_for(p.stdout, n1)
    check(len(l0) == 1 and len(l1) == 1, "one line per node", p.stdout)
    # The injected 500 ms is measured across a loaded machine: assert the
    # verdict (ahead, over the 100 ms limit), not a window on the estimate.
    check(re.search(r"clock_skew: clock \d+\.\d+ ms ahead of rank 0 \(.*\) \(max 100 ms\)", l1[0]), "node 1's clock named", l1[0])
    check("clock_skew" not in l0[0], "node 0 is the reference clock", l0[0])
    for line, peer in ((l0[0], n1), (l1[0], n0)):
        check(re.search(r"allreduce_busbw: bus bandwidth [0-9.]+ GB/s < minimum 1e\+06 GB/s \(2 ranks, 1 MiB\)", line) or
              re.search(r"allreduce_busbw: bus bandwidth [0-9.]+ GB/s < minimum 1000000 GB/s", line), "busbw failure named", line)
        check(f"link_bandwidth: link to {peer}: " in line and "< minimum 1000000.000 GB/s" in line, "link failure names the peer", line)
    check("rank_reachability" not in l0[0] + l1[0], "reachability passed", p.stdout)
    check(p.stdout.count("scontrol update nodename=") == 2, "two drain commands", p.stdout)
    j = json.load(open(report))
    equal([n["label"] for n in j["nodes"]], [n0, n1], "node labels")
    skew = {c["name"]: c for c in j["nodes"][1]["checks"]}["clock_skew"]
    check(skew["status"] == "fail" and skew["values"]["offset_ms"] > 100, f"clock_skew {skew}")
