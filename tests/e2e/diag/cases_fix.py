"""Fixes of issues 15 and 16 in smddp-diag: ranks that disagree, drains named
by Slurm, the local profile on GPU nodes, the Slurm prolog, topo on AWS's
topology files, and the exporter (IPv6, port state, GPU labels, no NaN)."""

import json
import os
import re
import socket
import subprocess
import time

import fixtures
from harness import ARGS, HOST, Server, case, check, diag, equal, http_get, nvml_env, wait_for

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
PROLOG = os.path.join(REPO, "scripts", "slurm", "prolog-preflight.sh")


def mpmd(tmp, per_rank_args, timeout=30):
    """mpirun with one rank per argument list; returns (CompletedProcess, seconds)."""
    cmd = [ARGS.mpirun, "--oversubscribe", "--bind-to", "none", "-x", "SMDDP_TIMEOUT=60"]
    for i, args in enumerate(per_rank_args):
        if i:
            cmd.append(":")
        cmd += ["-np", "1", ARGS.bin, *args]
    env = dict(os.environ)
    env.pop("SMDDP_NVML_LIBRARY", None)
    started = time.time()
    try:
        p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as e:
        raise AssertionError(f"still running after {timeout} s: {' '.join(cmd)}\n{e.stdout}\n{e.stderr}")
    return p, time.time() - started


@case
def fix_preflight_mismatch_np2(tmp):
    a, b = os.path.join(tmp, "a.yaml"), os.path.join(tmp, "b.yaml")
    fixtures.write_profile(a, {"memlock": {"min": "4KiB"}, "allreduce_busbw": {"bytes": "1MiB", "min_gbytes_per_s": 0.001}}, name="a")
    fixtures.write_profile(b, {"memlock": {"min": "4KiB"}}, name="b")
    report = os.path.join(tmp, "r.json")
    for what, rank0, rank1 in (
            ("profiles", ["preflight", "-p", a, "--json", report], ["preflight", "-p", b, "--json", report]),
            ("--skip", ["preflight", "-p", a, "--json", report], ["preflight", "-p", a, "--skip", "memlock", "--json", report])):
        p, _ = mpmd(tmp, [rank0, rank1])
        equal(p.returncode, 64, f"different {what}: exit code\n{p.stdout}\n{p.stderr}")
        ours = [l for l in p.stderr.splitlines() if "smddp-diag" in l]
        equal(len(ours), 1, f"different {what}: one line from rank 0 ({p.stderr!r})")
        check("disagree" in ours[0] and f"rank 0 ({HOST}" in ours[0] and f"rank 1 ({HOST}" in ours[0],
              f"different {what}: the line names both ranks and hosts", ours[0])
        check(not os.path.exists(report), f"different {what}: no report written")
        equal(p.stdout.strip(), "", f"different {what}: no node lines")
    # The same setup on both ranks still runs.
    p, _ = mpmd(tmp, [["preflight", "-p", b, "--json", report]] * 2, timeout=120)
    equal(p.returncode, 0, f"agreeing ranks run the checks\n{p.stdout}\n{p.stderr}")
    check(os.path.exists(report), "agreeing ranks write the report")


def fake_scontrol(tmp, hostnames=None):
    """A fake scontrol first on PATH: logs its arguments, answers show hostnames."""
    bindir = os.path.join(tmp, "bin")
    os.makedirs(bindir, exist_ok=True)
    script = os.path.join(bindir, "scontrol")
    answer = "".join(f"echo {h}; " for h in (hostnames or []))
    with open(script, "w") as f:
        f.write(f'#!/bin/sh\nif [ "$1 $2" = "show hostnames" ]; then {answer}exit 0; fi\n'
                f'printf "%s\\n" "$@" >> {tmp}/scontrol.calls\n')
    os.chmod(script, 0o755)
    return bindir


@case
def fix_preflight_json_drain(tmp):
    env = nvml_env(temp="40,40,95,40")
    env["PATH"] = fake_scontrol(tmp, ["slurm-n1"]) + os.pathsep + os.environ["PATH"]
    args = ["preflight", "--profile", "p4d.24xlarge", "--checks", "gpu_count,gpu_temperature", "--json", "-", "--print-drain"]
    # SLURMD_NODENAME names the node.
    p = diag(*args, env=dict(env, SLURMD_NODENAME="slurm-node-7"), check_rc=1)
    j = json.loads(p.stdout)  # stdout is one JSON document, drain line or not
    equal((j["healthy"], j["nodes"][0]["slurm_node"]), (False, "slurm-node-7"), "JSON report names the Slurm node")
    drains = [l for l in p.stderr.splitlines() if l.startswith("scontrol update")]
    equal(len(drains), 1, f"one drain line on stderr ({p.stderr!r})")
    check(drains[0].startswith('scontrol update nodename=slurm-node-7 state=drain reason="smddp:SMDDP-PREFLIGHT-GPU-TEMPERATURE gpu_temperature: '),
          "the drain names SLURMD_NODENAME", drains[0])
    # Without it, inside an allocation: scontrol show hostnames maps the host.
    p = diag(*args, env=dict(env, SLURM_JOB_NODELIST="slurm-n1"), check_rc=1)
    check("nodename=slurm-n1 " in p.stderr, "the node list's name", p.stderr)
    # Outside Slurm: the host name; text lines and drain lines both on stdout.
    p = diag(*args[:-3], "--print-drain", env=env, check_rc=1)
    check(f"scontrol update nodename={HOST} state=drain" in p.stdout, "the host name outside Slurm", p.stdout)


@case
def fix_local_profile_gpu_node(tmp):
    # A GPU node without a profile of its own passes `local`: counts are not judged.
    p = diag("preflight", "--profile", "local", "--checks", "gpu_count,gpu_temperature", "-v", env=nvml_env(count=8), check_rc=0)
    check(re.search(r"gpu_count +pass +8 GPUs; any count is accepted", p.stdout), "8 GPUs accepted", p.stdout)
    # The provider check says when FI_PROVIDER hides the provider it wants.
    p = diag("preflight", "--profile", "local", "--checks", "fabric_provider", env={"FI_PROVIDER": "efa"}, check_rc=1)
    check("fabric_provider: libfabric provider tcp has no RDM endpoint" in p.stdout and "FI_PROVIDER=efa" in p.stdout,
          "the FI_PROVIDER filter is named", p.stdout)


def run_prolog(tmp, log_dir, extra, calls):
    env = ["env", "-i", "PATH=", "SLURMD_NODENAME=slurm-node-3", "SLURM_JOB_ID=77", f"SMDDP_BIN_DIR={os.path.dirname(ARGS.bin)}",
           f"SMDDP_SCONTROL={fake_scontrol(tmp)}/scontrol", f"SMDDP_PREFLIGHT_LOG_DIR={log_dir}",
           f"SMDDP_PREFLIGHT_CONFIG={tmp}/none.env", *[f"{k}={v}" for k, v in extra.items()]]
    if os.path.exists(calls):
        os.remove(calls)
    p = subprocess.run([*env, PROLOG], capture_output=True, text=True, timeout=60)
    return p, (open(calls).read().splitlines() if os.path.exists(calls) else [])


@case
def fix_slurm_prolog(tmp):
    calls = os.path.join(tmp, "scontrol.calls")
    log_dir = os.path.join(tmp, "log")
    prof = os.path.join(tmp, "hot.yaml")
    fixtures.write_profile(prof, {"gpu_temperature": {"max_celsius": 85}, "disk_free": {"min": "1000PiB"}})
    hot = dict(nvml_env(count=8, temp=",".join(["95"] * 8)), SMDDP_PREFLIGHT_PROFILE=prof, SMDDP_PREFLIGHT_DRAIN="1",
               SMDDP_PREFLIGHT_KEEP="2")
    # Under Slurm's empty environment: it runs, drains with the whole reason, exits 1.
    for _ in range(3):
        p, got = run_prolog(tmp, log_dir, hot, calls)
        equal(p.returncode, 1, f"unhealthy and DRAIN=1: exit 1 ({p.stderr!r})")
    equal(got[:3], ["update", "nodename=slurm-node-3", "state=drain"], "scontrol drains SLURMD_NODENAME")
    reason = got[3][len("reason="):]
    check(len(reason) <= 255 and reason.startswith("smddp:SMDDP-PREFLIGHT-GPU-TEMPERATURE gpu_temperature: GPU 0 ") and reason.endswith("(+1 more)"),
          "the reason: whole words within 255 bytes, the rest counted", reason)
    check(re.search(r"(\)|\.\.\.) \(\+1 more\)$", reason), "never cut mid-word", reason)
    # One fixed report and .prom; older reports rotate, N kept.
    equal(sorted(os.listdir(log_dir)), ["preflight.json", "preflight.json.1", "preflight.json.2", "preflight.log", "preflight.prom"],
          "files of three runs with KEEP=2")
    equal(json.load(open(os.path.join(log_dir, "preflight.json")))["nodes"][0]["slurm_node"], "slurm-node-3", "report")
    check("smddp_preflight_healthy 0" in open(os.path.join(log_dir, "preflight.prom")).read(), "textfile for node_exporter")
    # Its own problems never drain: no log directory, no smddp-diag.
    blocker = os.path.join(tmp, "file")
    open(blocker, "w").close()
    p, got = run_prolog(tmp, os.path.join(blocker, "log"), hot, calls)
    equal((p.returncode, got), (0, []), f"log directory cannot be created: exit 0, no drain ({p.stderr!r})")
    check("cannot create or write" in p.stderr or p.stderr == "", "said on stderr (or syslog)", p.stderr)
    p, got = run_prolog(tmp, log_dir, dict(hot, SMDDP_BIN_DIR=os.path.join(tmp, "nowhere")), calls)
    equal((p.returncode, got), (0, []), "no smddp-diag: exit 0, no drain")
    check("exit=127" in open(os.path.join(log_dir, "preflight.log")).read(), "logged")
    # Healthy: exit 0, nothing drained.
    ok = os.path.join(tmp, "ok.yaml")
    fixtures.write_profile(ok, {"memlock": {"min": "4KiB"}})
    p, got = run_prolog(tmp, log_dir, dict(hot, SMDDP_PREFLIGHT_PROFILE=ok), calls)
    equal((p.returncode, got), (0, []), "healthy: exit 0")


def write(path, text):
    with open(path, "w") as f:
        f.write(text)
    return path


def p5_like_xml(path):
    """Modelled on AWS's p5.48xlarge topology: per switch one H100 (sm 90) and 4 EFA NICs named rdmap*, 100 Gb/s each."""
    lines = ['<system version="1">']
    gpu = 0
    for numa in range(2):
        lines.append(f'  <cpu numaid="{numa}" affinity="{"0000ffff,ffffffff" if numa == 0 else "ffffffff,ffff0000,00000000"}" arch="x86_64">')
        for sw in range(4):
            bus = 0x10 + 0x20 * (numa * 4 + sw)
            lines.append(f'    <pci busid="0000:{numa * 4 + sw:02x}:01.0" class="0x060400" link_width="16">')
            lines.append(f'      <pci busid="0000:{bus:02x}:00.0" class="0x030200" link_width="16"><gpu dev="{gpu}" sm="90" rank="{gpu}"/></pci>')
            for n in range(4):
                b = bus + 1 + n
                lines.append(f'      <pci busid="0000:{b:02x}:00.0" class="0x020000" link_width="8"><nic>'
                             f'<net name="rdmap{b}s0" dev="{gpu * 4 + n}" speed="100000" port="1" gdr="1"/></nic></pci>')
            lines.append('    </pci>')
            gpu += 1
        lines.append('  </cpu>')
    lines.append('</system>')
    return write(path, "\n".join(lines) + "\n")


@case
def fix_topo_aws_files(tmp):
    p5 = p5_like_xml(os.path.join(tmp, "p5.xml"))
    j = json.loads(diag("topo", "--nccl-topo", p5, "--json", check_rc=0).stdout)
    equal((len(j["gpus"]), len(j["nics"])), (8, 32), "8 GPUs, 32 NICs")
    equal({(n["kind"], n["speed_gbps"]) for n in j["nics"]}, {("efa", 100.0)}, "every NIC: EFA at 100 Gb/s")
    equal({g["sm"] for g in j["gpus"]}, {90}, "GPU sm from <gpu sm>")
    equal({(d["vendor"], d["device"], d["memory_bytes"] if "memory_bytes" in d else None) for d in j["devices"]}, {(None, None, None)},
          "ids the file lacks are null, not 0")
    check(all(g["memory_bytes"] is None and g["model"] is None for g in j["gpus"]), "unknown GPU memory and model are null")
    text = diag("topo", "--nccl-topo", p5, check_rc=0).stdout
    check(re.search(r"^  GPU0 +0000:10:00.0 +NUMA  0  GPU, sm 90$", text, re.M), "text: GPU sm", text)
    check(re.search(r"^  NIC0 +0000:11:00.0 +NUMA  0  efa, 100 Gb/s  rdmap17s0$", text, re.M), "text: NIC kind and speed", text)
    check(re.search(r"class 0x020000  ----:----", text), "text: unknown ids are dashes", text)
    # g5.48xlarge style: bare <pci busid> entries; ids identify some.
    g5 = write(os.path.join(tmp, "g5.xml"), '<system version="1">\n  <cpu numaid="0">\n'
               + "".join(f'    <pci busid="0000:00:{b:02x}.0"/>\n' for b in (0x16, 0x17, 0x18))
               + '    <pci busid="0000:00:19.0" vendor="0x10de" device="0x2237"/>\n  </cpu>\n  <cpu numaid="1">\n'
               + '    <pci busid="0000:00:1a.0" vendor="0x1d0f" device="0xefa1"/>\n    <pci busid="0000:00:1b.0"/>\n  </cpu>\n</system>\n')
    p = diag("topo", "--nccl-topo", g5, "--json", check_rc=0)
    j = json.loads(p.stdout)
    equal(([g["busid"] for g in j["gpus"]], [(n["busid"], n["kind"]) for n in j["nics"]]),
          (["0000:00:19.0"], [("0000:00:1a.0", "efa")]), "devices identified by vendor/device ids")
    equal(len(j["warnings"]), 1, "one warning")
    check(j["warnings"][0].startswith("4 of 6 PCI devices could not be identified: no class and no vendor/device ids (lines 3, 4, 5, 10)"),
          "the warning counts the devices and names their lines", j["warnings"][0])
    check("smddp-diag topo: warning: 4 of 6 PCI devices" in p.stderr, "warning on stderr", p.stderr)
    # The same device or NUMA node twice: refused like malformed XML, with both lines.
    dup = write(os.path.join(tmp, "dup.xml"), '<system version="1">\n  <cpu numaid="0">\n    <pci busid="0000:10:1c.0" class="0x030200"/>\n'
                '    <pci busid="0000:10:1C.0" class="0x030200"/>\n  </cpu>\n</system>\n')
    p = diag("topo", "--nccl-topo", dup, check_rc=64)
    equal(p.stderr.strip(), f"smddp-diag: --nccl-topo '{dup}': line 4: busid '0000:10:1C.0' repeats the device of line 3", "duplicate bus id")
    dup = write(os.path.join(tmp, "dupnuma.xml"), '<system version="1">\n  <cpu numaid="0"/>\n  <cpu numaid="0"/>\n</system>\n')
    p = diag("topo", "--nccl-topo", dup, check_rc=64)
    equal(p.stderr.strip(), f"smddp-diag: --nccl-topo '{dup}': line 3: <cpu numaid=\"0\"> repeats the NUMA node of line 2", "duplicate NUMA id")
    # hwloc XML: an OpenFabrics device named rdmap* is EFA whatever its PCI ids.
    hw = os.path.join(tmp, "hwloc.xml")
    fixtures.write_hwloc_xml(hw)
    text = open(hw).read().replace("[1d0f:efa0] [1d0f:0000]", "[8086:1572] [8086:0000]")
    write(hw, text)
    j = json.loads(diag("topo", "--hwloc-xml", hw, "--json", check_rc=0).stdout)
    equal([(n["name"], n["kind"], n["speed_gbps"]) for n in j["nics"]], [(n, "efa", None) for n in fixtures.NIC_NAMES],
          "hwloc XML: rdmap OS devices are EFA; speed unknown is null")


def ipv6_loopback():
    try:
        with socket.socket(socket.AF_INET6) as s:
            s.bind(("::1", 0))
        return True
    except OSError:
        return False


@case
def fix_exporter(tmp):
    root = os.path.join(tmp, "root")
    fixtures.write_sysfs(root, efa=2, down=(1,))
    help_text = diag("exporter", "--help", check_rc=0).stdout
    check("0.0.0.0:9466" in help_text, "default port 9466 (not DCGM's 9400, not the bench example's)", help_text)
    listen = "[::1]:0" if ipv6_loopback() else "127.0.0.1:0"
    port_file = os.path.join(tmp, "port")
    env = dict(os.environ, **nvml_env(count=2, temp="41,77"))
    server = Server([ARGS.bin, "--sysfs-root", root, "exporter", "--listen", listen, "--port-file", port_file, "--interval", "0.2",
                     "--exit-after", "60"], env=env, log=os.path.join(tmp, "exporter.log"))
    try:
        port = int(wait_for("port file", lambda: open(port_file).read().strip() if os.path.exists(port_file) else None))
        host = "[::1]" if listen.startswith("[") else "127.0.0.1"
        # Two scrapes: the second one follows a served request.
        for _ in range(2):
            status, body = http_get(f"http://{host}:{port}/metrics")
        equal(status, 200, "scrape")
        check("NaN" not in body and "nan" not in body.lower().replace("nanoseconds", ""), "no NaN in /metrics", body)
        names = fixtures.EFA_NAMES
        check(f'smddp_efa_port_state{{device="{names[0]}",port="1",state="ACTIVE"}} 1' in body, "port 1 of device 0 ACTIVE", body)
        check(f'smddp_efa_port_state{{device="{names[1]}",port="1",state="DOWN"}} 1' in body, "port 1 of device 1 DOWN", body)
        check(re.search(r'smddp_gpu_temperature_celsius\{busid="0000:10:1c\.0",gpu="0",uuid="GPU-fake-0000"\} 41', body),
              "GPU series carry index, UUID and bus id", body)
        lint = subprocess.run([ARGS.promtool, "check", "metrics"], input=body, capture_output=True, text=True)
        equal((lint.returncode, lint.stdout + lint.stderr), (0, ""), "promtool check metrics")
    finally:
        server.stop()
