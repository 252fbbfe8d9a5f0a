#!/usr/bin/env python3
"""The launch scripts end to end: SageMaker entry, Slurm sbatch and prolog, shellcheck, perf-report.sh --check.

Usage: scripts_e2e.py --root REPO [--bench PATH] [--netns-cluster PATH] TEST

SageMaker is faked by a /opt/ml tree in a temporary directory (--ml-root);
Slurm's srun and scontrol and a failing smddp-diag by small scripts first in
PATH. Every test asserts on exit codes, files and the exact command lines.
Exit 77 means skipped (CTest SKIP_RETURN_CODE).
"""
import argparse
import glob
import json
import os
import shlex
import shutil
import stat
import subprocess
import sys
import tempfile

ARGS = None
SKIP = 77
BASE_MPIRUN = ["--bind-to", "none", "--map-by", "slot", "--tag-output"]


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


def write(path, text, mode=0o644):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)
    os.chmod(path, mode)


def clean_env(**extra):
    """The caller's environment without any launcher, SageMaker or smddp settings."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("SMDDP_", "NCCL_", "FI_", "SM_", "OMPI_", "PMIX_", "SLURM"))}
    env.update(extra)
    return env


def fake_ml(root, hosts, current, iface, instance="ml.p4d.24xlarge", hyper=None):
    config = {"current_host": current, "current_group_name": "homogeneousCluster",
              "current_instance_type": instance, "hosts": hosts, "network_interface_name": iface}
    write(os.path.join(root, "input/config/resourceconfig.json"), json.dumps(config))
    if hyper is not None:
        write(os.path.join(root, "input/config/hyperparameters.json"), json.dumps(hyper))


def fake_bin(d, name, body):
    write(os.path.join(d, name), "#!/bin/sh\n" + body + "\n", 0o755)


def entry(ml_root, env, *args, prefix=()):
    cmd = [*prefix, os.path.join(ARGS.root, "scripts/sagemaker-entry.sh"), "train", "--dry-run", "--ml-root", ml_root,
           *args]
    return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=60)


def sections(stdout):
    """'# title' headed blocks of the dry-run output."""
    out, title = {}, None
    for line in stdout.splitlines():
        if line.startswith("# "):
            title = line[2:]
            out[title] = []
        elif title is not None:
            out[title].append(line)
    return out


def expected_mpirun(np, per_host, iface, hostfile=None, exports=()):
    words = ["mpirun", "--allow-run-as-root"]
    if hostfile:
        words += ["--hostfile", hostfile, "--mca", "plm_rsh_no_tree_spawn", "1"]
    words += ["-np", str(np), "--npernode", str(per_host), *BASE_MPIRUN,
              "--mca", "btl_tcp_if_include", iface, "--mca", "oob_tcp_if_include", iface,
              "--mca", "pml", "ob1", "--mca", "btl", "^openib", "--mca", "orte_abort_on_non_zero_status", "1",
              "-x", "FI_PROVIDER=efa",
              "-x", f"NCCL_SOCKET_IFNAME={iface}", "-x", "PATH", "-x", "LD_LIBRARY_PATH"]
    for name in exports:
        words += ["-x", name]
    return words


def expect_words(got_line, want, what):
    got = shlex.split(got_line)
    if got != want:
        fail(f"{what}:\n got  {got}\n want {want}")


def test_sagemaker_1host():
    """One host, 8 GPUs from nvidia-smi, p5 profile: local mpirun (no hostfile, no ssh), preflight then bench."""
    with tempfile.TemporaryDirectory() as d:
        ml, work, bins = f"{d}/ml", f"{d}/work", f"{d}/bin"
        fake_ml(ml, ["algo-1"], "algo-1", "lo", instance="ml.p5.48xlarge")
        fake_bin(bins, "nvidia-smi", "for i in 0 1 2 3 4 5 6 7; do echo \"GPU $i: NVIDIA H100 80GB HBM3 (UUID: GPU-$i)\"; done")
        env = clean_env(PATH=f"{bins}:{os.environ['PATH']}", SMDDP_SM_WORK_DIR=work, SMDDP_BIN_DIR="/opt/x/bin",
                        SM_NUM_GPUS="2")
        r = entry(ml, env)
        if r.returncode != 0:
            fail(f"exit {r.returncode}: {r.stderr}")
        s = sections(r.stdout)
        if s.get(f"hostfile {work}/hostfile") != ["algo-1 slots=8"]:
            fail(f"hostfile section: {s}")
        if set(s) != {f"hostfile {work}/hostfile", "preflight", "benchmark"}:
            fail(f"sections {list(s)}")
        base = expected_mpirun(8, 8, "lo")
        out = f"{ml}/output/data"
        expect_words(s["preflight"][0], base + ["/opt/x/bin/smddp-diag", "preflight", "-p", "p5.48xlarge", "--json",
                                                f"{out}/preflight.json", "--prom-textfile", f"{out}/preflight.prom"],
                     "preflight command")
        expect_words(s["benchmark"][0], base + ["/opt/x/bin/smddp-bench", "all", "-b", "8", "-e", "256M", "-f", "4",
                                                "-c", "1", "-J", f"{out}/results.json", "--csv", f"{out}/results.csv",
                                                "--emf", f"{out}/metrics.emf.jsonl"], "benchmark command")
        if os.path.exists(work) or os.path.exists(out):
            fail("--dry-run wrote files")
    print("1 host: hostfile and both command lines exact")


def run_in_namespace(ns):
    return ("ip", "netns", "exec", ns) if ns else ()


def test_sagemaker_2hosts():
    """Two hosts in network namespaces (scripts/netns-cluster.sh): leader and follower.
    As root a namespace that cannot be made is a failure; without root the
    test is skipped, never passed on one host."""
    if os.geteuid() != 0:
        print("SKIP: network namespaces need root")
        sys.exit(SKIP)
    if not ARGS.netns_cluster or not os.path.exists(ARGS.netns_cluster):
        fail(f"no netns-cluster script at {ARGS.netns_cluster!r}")
    env_ns = dict(os.environ, SMDDP_NETNS_NAME="dplsm", SMDDP_NETNS_NET="78")
    up = subprocess.run([ARGS.netns_cluster, "up", "2"], env=env_ns, capture_output=True, text=True, timeout=60)
    if up.returncode != 0:
        fail(f"netns-cluster up failed: {up.stderr.strip()}")
    namespaces, iface = ("dplsm-h0", "dplsm-h1"), "eth0"
    try:
        with tempfile.TemporaryDirectory() as d:
            work, bins = f"{d}/work", f"{d}/bin"
            fake_bin(bins, "nvidia-smi", "exit 9")  # present but failing: SM_NUM_GPUS decides
            hyper = {"bench-args": "allreduce -b 1K -e '1M' --op max", "preflight": "false"}
            env = clean_env(PATH=f"{bins}:{os.environ['PATH']}", SMDDP_SM_WORK_DIR=work, SMDDP_BIN_DIR="/b",
                            SM_NUM_GPUS="4", SMDDP_TIMEOUT="99", NCCL_DEBUG="INFO")
            outputs = []
            for i, host in enumerate(["algo-1", "algo-2"]):
                ml = f"{d}/ml-{host}"
                fake_ml(ml, ["algo-1", "algo-2"], host, iface, hyper=hyper)
                r = entry(ml, env, prefix=run_in_namespace(namespaces[i]))
                if r.returncode != 0:
                    fail(f"{host}: exit {r.returncode}: {r.stderr}")
                outputs.append((ml, sections(r.stdout)))
            hostfile = f"{work}/hostfile"
            (ml, leader), (_, follower) = outputs
            for s in (leader, follower):
                if s.get(f"hostfile {hostfile}") != ["algo-1 slots=4", "algo-2 slots=4"]:
                    fail(f"hostfile: {s}")
            if set(leader) != {f"hostfile {hostfile}", "benchmark", "release the other hosts"}:
                fail(f"leader sections (preflight is off): {list(leader)}")
            out = f"{ml}/output/data"
            exports = ["NCCL_DEBUG", "SMDDP_TIMEOUT"]
            expect_words(leader["benchmark"][0],
                         expected_mpirun(8, 4, iface, hostfile, exports) +
                         ["/b/smddp-bench", "allreduce", "-b", "1K", "-e", "1M", "--op", "max", "-J",
                          f"{out}/results.json", "--csv", f"{out}/results.csv", "--emf", f"{out}/metrics.emf.jsonl"],
                         "leader's benchmark command")
            expect_words(leader["release the other hosts"][0],
                         expected_mpirun(2, 1, iface, hostfile, exports) + ["touch", f"{work}/leader-done"],
                         "leader's release command")
            if not any(t.startswith("algo-2 follows the leader algo-1") for t in follower) or len(follower) != 2:
                fail(f"follower sections: {follower}")
    finally:
        subprocess.run([ARGS.netns_cluster, "down"], env=env_ns, capture_output=True, timeout=60)
    print("2 hosts in network namespaces: hostfile, leader's commands and follower exact")


def test_sagemaker_bad_config():
    """Missing or malformed configuration: one line naming the problem, exit 64, nothing run."""
    good = {"current_host": "algo-1", "hosts": ["algo-1"], "network_interface_name": "lo"}
    cases = [
        (None, {}, "no ", "resourceconfig.json and no SM_HOSTS"),
        ('{"current_host": "algo-1", "hosts": ["algo-1",', {}, "not JSON", "line 1"),
        ("[1, 2]", {}, "expected a JSON object", ""),
        (json.dumps({"hosts": ["algo-1"]}), {}, "'current_host' is missing", ""),
        (json.dumps(dict(good, hosts=[])), {}, "'hosts' must be a non-empty list", ""),
        (json.dumps(dict(good, current_host="algo-9")), {}, "current_host 'algo-9' is not one of the 1 hosts", ""),
        (json.dumps(dict(good, hosts=["algo-1", "algo-1"])), {}, "lists a host twice", ""),
        (json.dumps(dict(good, hosts=["algo-1", "bad host"])), {}, "is not a valid host name", ""),
        (json.dumps(dict(good, network_interface_name="nosuch0")), {}, "'nosuch0' is not a network interface", ""),
        (json.dumps(good), {"SM_NUM_GPUS": "eight"}, "SM_NUM_GPUS='eight'", ""),
        (None, {"SM_HOSTS": "algo-1", "SM_CURRENT_HOST": "algo-1"}, "SM_HOSTS (a JSON list", "not JSON"),
        # Hostile input (issue 36): no traceback, no hang, one line.
        ('{"current_host": "algo-1", "hosts": ' + "[" * 3000 + "]" * 3000 + "}", {}, "nested deeper", ""),
        ('{"current_host": "algo-1", "hosts": ["algo-1"], "x": NaN}', {}, "NaN", ""),
        ('{"current_host": "algo-1", "hosts": ["algo-1"], "x": 1e999}', {}, "overflows", ""),
        ('{"current_host": "\\ud800", "hosts": ["algo-1"]}', {}, "surrogate", ""),
        (b'{"current_host": "algo-1\xff", "hosts": ["algo-1"]}', {}, "not UTF-8", ""),
        (json.dumps(dict(good, hosts=[f"algo-{i}" for i in range(20000)])), {}, "at most 10000", ""),
        (json.dumps(dict(good, current_host=["algo-1"])), {}, "is not one of the", ""),
        ("FIFO", {}, "not a regular file", ""),
        ("DIR", {}, "a directory", ""),
        (None, {"SM_HOSTS": '["algo-1", NaN]', "SM_CURRENT_HOST": "algo-1"}, "NaN", ""),
        (None, {"SM_HOSTS": "[" * 5000, "SM_CURRENT_HOST": "algo-1"}, "SM_HOSTS", ""),
    ]
    with tempfile.TemporaryDirectory() as d:
        bins = f"{d}/bin"
        fake_bin(bins, "nvidia-smi", "exit 9")
        for i, (text, extra, needle, needle2) in enumerate(cases):
            ml = f"{d}/ml{i}"
            os.makedirs(f"{ml}/input/config")
            config = f"{ml}/input/config/resourceconfig.json"
            if text == "FIFO":
                os.mkfifo(config)  # no writer: a blocking open would wait forever
            elif text == "DIR":
                os.makedirs(config)
            elif isinstance(text, bytes):
                open(config, "wb").write(text)
            elif text is not None:
                write(config, text)
            env = clean_env(PATH=f"{bins}:{os.environ['PATH']}", SMDDP_SM_WORK_DIR=f"{d}/w", **extra)
            r = subprocess.run([os.path.join(ARGS.root, "scripts/sagemaker-entry.sh"), "--ml-root", ml],
                               env=env, capture_output=True, text=True, timeout=60)
            lines = r.stderr.strip().splitlines()
            if r.returncode != 64 or len(lines) != 1 or needle not in lines[0] or needle2 not in lines[0] \
                    or "Traceback" in r.stderr:
                fail(f"case {i}: exit {r.returncode}, stderr {r.stderr!r}; expected 64 and {needle!r}")
            if not lines[0].startswith("sagemaker-entry: ") or r.stdout:
                fail(f"case {i}: unexpected output {r.stdout!r} {r.stderr!r}")
        # SM_HOSTS and SM_CURRENT_HOST stand in for the file.
        env = clean_env(PATH=f"{bins}:{os.environ['PATH']}", SMDDP_SM_WORK_DIR=f"{d}/w",
                        SM_HOSTS='["algo-1","algo-2"]', SM_CURRENT_HOST="algo-2", SM_NETWORK_INTERFACE_NAME="lo")
        os.makedirs(f"{d}/empty/input/config")
        r = entry(f"{d}/empty", env)
        if r.returncode != 0 or "algo-2 follows the leader algo-1" not in r.stdout:
            fail(f"SM_HOSTS fallback: exit {r.returncode} {r.stdout} {r.stderr}")
        # Hyperparameters: a FIFO, a wrong type, deep nesting.
        for i, (hyper, needle) in enumerate((("FIFO", "not a regular file"), ('{"preflight": [true]}', "preflight"),
                                             ('{"bench-args": 5}', "must be strings"),
                                             ("[" * 4000, "nested deeper"))):
            ml = f"{d}/hp{i}"
            os.makedirs(f"{ml}/input/config")
            write(f"{ml}/input/config/resourceconfig.json", json.dumps(good))
            if hyper == "FIFO":
                os.mkfifo(f"{ml}/input/config/hyperparameters.json")
            else:
                write(f"{ml}/input/config/hyperparameters.json", hyper)
            env = clean_env(PATH=f"{bins}:{os.environ['PATH']}", SMDDP_SM_WORK_DIR=f"{d}/w")
            r = subprocess.run([os.path.join(ARGS.root, "scripts/sagemaker-entry.sh"), "--ml-root", ml],
                               env=env, capture_output=True, text=True, timeout=60)
            lines = r.stderr.strip().splitlines()
            if r.returncode != 64 or len(lines) != 1 or needle not in r.stderr or "Traceback" in r.stderr:
                fail(f"hyperparameters {hyper[:20]!r}: exit {r.returncode}, stderr {r.stderr!r}; expected 64, {needle!r}")
    print(f"{len(cases)} bad configurations refused with 64; SM_HOSTS fallback works")


def test_sagemaker_run_1host():
    """A real one-host job on a fake /opt/ml: mpirun runs smddp-bench on 2 slots, results land in output/data."""
    if not ARGS.bench:
        fail("--bench is required")
    with tempfile.TemporaryDirectory() as d:
        ml, bins = f"{d}/ml", f"{d}/bin"
        fake_ml(ml, ["algo-1"], "algo-1", "lo")
        os.makedirs(bins)
        os.symlink(ARGS.bench, f"{bins}/smddp-bench")
        fake_bin(bins, "nvidia-smi", "exit 9")
        # A preflight that fails stops the job before the benchmark, with the reason for SageMaker.
        fake_bin(bins, "smddp-diag", "echo 'algo-1: UNHEALTHY (gpu_count: 0 of 8)'; exit 1")
        env = clean_env(PATH=f"{bins}:{os.environ['PATH']}", SMDDP_SM_WORK_DIR=f"{d}/w", SMDDP_BIN_DIR=bins,
                        SM_NUM_GPUS="2")
        script = os.path.join(ARGS.root, "scripts/sagemaker-entry.sh")
        args = ["--", "allreduce", "-b", "8", "-e", "64K", "-f", "8", "-c", "1", "-n", "2", "-w", "1"]
        r = subprocess.run([script, "train", "--ml-root", ml, *args], env=env, capture_output=True, text=True,
                           timeout=120)
        failure = f"{ml}/output/failure"
        if r.returncode == 0 or not os.path.exists(failure) or "preflight failed (exit" not in open(failure).read():
            fail(f"failing preflight: exit {r.returncode}\n{r.stdout}\n{r.stderr}")
        if os.path.exists(f"{ml}/output/data/results.json"):
            fail("the benchmark ran after a failed preflight")
        os.remove(failure)
        env["SMDDP_PREFLIGHT"] = "0"
        r = subprocess.run([script, "train", "--ml-root", ml, *args], env=env, capture_output=True, text=True,
                           timeout=180)
        if r.returncode != 0:
            fail(f"exit {r.returncode}\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}")
        with open(f"{ml}/output/data/results.json") as f:
            doc = json.load(f)
        if doc["nranks"] != 2 or not doc["complete"] or not doc["rows"] or any(x["wrong"] for x in doc["rows"]):
            fail(f"results.json: nranks {doc['nranks']} complete {doc['complete']} rows {len(doc['rows'])}")
        csv_lines = open(f"{ml}/output/data/results.csv").read().splitlines()
        emf = open(f"{ml}/output/data/metrics.emf.jsonl").read().splitlines()
        if len(csv_lines) != 1 + len(doc["rows"]) or not emf or "_aws" not in json.loads(emf[0]):
            fail(f"CSV {len(csv_lines)} lines, EMF {len(emf)} documents")
        if os.path.exists(failure):
            fail("a failure file after a good run")
    print(f"failed preflight stops the job; good run: {len(doc['rows'])} rows, CSV and EMF in output/data")


def slurm_fakes(d, diag_rc=0, output="node7: UNHEALTHY (efa_devices: 0 of 4)"):
    bins = f"{d}/bin"
    fake_bin(bins, "srun", f'echo "srun $*" >>{d}/calls; case "$*" in *preflight*) exit {diag_rc};; esac; exit 0')
    fake_bin(bins, "scontrol", f'echo "scontrol $*" >>{d}/calls')
    with open(f"{d}/diag-output", "w") as f:
        f.write(output + "\n")
    fake_bin(bins, "smddp-diag", f'echo "smddp-diag $*" >>{d}/calls; cat {d}/diag-output; exit {diag_rc}')
    return bins


def calls(d):
    path = f"{d}/calls"
    return open(path).read().splitlines() if os.path.exists(path) else []


def test_slurm_sbatch():
    """The sbatch script: preflight then benchmark through srun; a failed preflight stops it; 64 outside Slurm."""
    script = os.path.join(ARGS.root, "scripts/slurm/smddp-bench.sbatch")
    for diag_rc in (0, 1):
        with tempfile.TemporaryDirectory() as d:
            bins = slurm_fakes(d, diag_rc)
            env = clean_env(PATH=f"{bins}:{os.environ['PATH']}", SLURM_JOB_ID="42", SLURM_JOB_NUM_NODES="2",
                            SLURM_SUBMIT_DIR=d, SMDDP_BIN_DIR="/b")
            r = subprocess.run(["bash", script, "allreduce", "-b", "1M"], env=env, capture_output=True, text=True,
                               timeout=60)
            got = calls(d)
            pre = f"srun --mpi=pmix --kill-on-bad-exit=1 /b/smddp-diag preflight -p local --print-drain --json {d}/smddp-results/preflight-42.json"
            bench = f"srun --mpi=pmix --kill-on-bad-exit=1 /b/smddp-bench allreduce -b 1M -J {d}/smddp-results/results-42.json --csv {d}/smddp-results/results-42.csv"
            want = [pre, bench] if diag_rc == 0 else [pre]
            if got != want or r.returncode != diag_rc:
                fail(f"preflight exit {diag_rc}: script exit {r.returncode}, calls {got}, want {want}\n{r.stderr}")
    r = subprocess.run(["bash", script], env=clean_env(), capture_output=True, text=True, timeout=30)
    if r.returncode != 64 or "not inside a Slurm allocation" not in r.stderr:
        fail(f"outside Slurm: exit {r.returncode} {r.stderr!r}")
    print("sbatch: preflight then benchmark; stops on a failed preflight; 64 outside an allocation")


def test_slurm_prolog():
    """The prolog drains an unhealthy node only when SMDDP_PREFLIGHT_DRAIN=1, and never for its own errors."""
    script = os.path.join(ARGS.root, "scripts/slurm/prolog-preflight.sh")
    cases = [  # (diag exit, DRAIN, prolog exit, drained)
        (0, "1", 0, False), (1, "0", 0, False), (1, "1", 1, True), (64, "1", 0, False), (70, "1", 0, False)]
    for diag_rc, drain, want_rc, drained in cases:
        with tempfile.TemporaryDirectory() as d:
            bins = slurm_fakes(d, diag_rc)
            env = clean_env(PATH=f"{bins}:{os.environ['PATH']}", SLURMD_NODENAME="node7", SLURM_JOB_ID="42",
                            SMDDP_BIN_DIR=bins, SMDDP_PREFLIGHT_DRAIN=drain, SMDDP_PREFLIGHT_LOG_DIR=f"{d}/log",
                            SMDDP_PREFLIGHT_CONFIG=f"{d}/none.env")
            r = subprocess.run(["bash", script], env=env, capture_output=True, text=True, timeout=60)
            got = calls(d)
            drains = [c for c in got if c.startswith("scontrol")]
            want_drain = ['scontrol update nodename=node7 state=drain reason=smddp:SMDDP-UNCLASSIFIED node7: UNHEALTHY (efa_devices: 0 of 4)']
            if r.returncode != want_rc or (drains != want_drain if drained else drains):
                fail(f"diag {diag_rc} DRAIN={drain}: exit {r.returncode} (want {want_rc}), calls {got}\n{r.stderr}")
            if not got or not got[0].startswith("smddp-diag preflight -p local --json"):
                fail(f"preflight not run as expected: {got}")
            log = open(f"{d}/log/preflight.log").read()
            if f"job=42 node=node7 exit={diag_rc}" not in log:
                fail(f"log: {log!r}")
    # smddp-diag's own lines: its drain line's reason (smddp:CODE ...) is the
    # one used; a failure whose action drains nothing (a "not drained"
    # comment, docs/diag.md "Failure codes") leaves the node in service.
    drain_line = ('node7 | ERROR: gpu_ecc: GPU 0 has 2 uncorrectable ECC errors\n'
                  'scontrol update nodename=node7 state=drain reason="smddp:SMDDP-PREFLIGHT-GPU-ECC gpu_ecc: GPU 0 has 2 '
                  'uncorrectable ECC errors"')
    note = ('node7 | ERROR: x: RAS could not reach rank 3\n'
            '# smddp:SMDDP-RAS-PEER-UNRESPONSIVE node7: not drained (action none): x: RAS could not reach rank 3')
    for output, want_rc, want_drain, want_log in (
            (drain_line, 1, ["scontrol update nodename=node7 state=drain reason=smddp:SMDDP-PREFLIGHT-GPU-ECC gpu_ecc: "
                             "GPU 0 has 2 uncorrectable ECC errors"], "drained: smddp:SMDDP-PREFLIGHT-GPU-ECC"),
            (note, 0, [], "unhealthy, not drained: smddp:SMDDP-RAS-PEER-UNRESPONSIVE node7")):
        with tempfile.TemporaryDirectory() as d:
            bins = slurm_fakes(d, 1, output)
            env = clean_env(PATH=f"{bins}:{os.environ['PATH']}", SLURMD_NODENAME="node7", SLURM_JOB_ID="42",
                            SMDDP_BIN_DIR=bins, SMDDP_PREFLIGHT_DRAIN="1", SMDDP_PREFLIGHT_LOG_DIR=f"{d}/log",
                            SMDDP_PREFLIGHT_CONFIG=f"{d}/none.env")
            r = subprocess.run(["bash", script], env=env, capture_output=True, text=True, timeout=60)
            drains = [c for c in calls(d) if c.startswith("scontrol")]
            log = open(f"{d}/log/preflight.log").read()
            if r.returncode != want_rc or drains != want_drain or want_log not in log or \
                    "exit=1 node7 | ERROR: " not in log:
                fail(f"{output.splitlines()[-1][:60]}: exit {r.returncode} (want {want_rc}), drains {drains}, "
                     f"log {log!r}\n{r.stderr}")
    # Hostile settings (issue 36): a FIFO as the config file, a huge keep count,
    # timeouts that are not whole seconds. The prolog neither hangs nor drains.
    for extra in ({"SMDDP_PREFLIGHT_CONFIG": "FIFO"}, {"SMDDP_PREFLIGHT_KEEP": "99999999999999999999"},
                  {"SMDDP_PREFLIGHT_TIMEOUT": "0x10"}, {"SMDDP_PREFLIGHT_TIMEOUT": "inf"},
                  {"SMDDP_PREFLIGHT_TIMEOUT": "1e300"}):
        with tempfile.TemporaryDirectory() as d:
            bins = slurm_fakes(d, 0)
            if extra.get("SMDDP_PREFLIGHT_CONFIG") == "FIFO":
                os.mkfifo(f"{d}/config.env")
                extra = {"SMDDP_PREFLIGHT_CONFIG": f"{d}/config.env"}
            env = clean_env(PATH=f"{bins}:{os.environ['PATH']}", SLURMD_NODENAME="node7", SLURM_JOB_ID="42",
                            SMDDP_BIN_DIR=bins, SMDDP_PREFLIGHT_DRAIN="1", SMDDP_PREFLIGHT_LOG_DIR=f"{d}/log",
                            **{"SMDDP_PREFLIGHT_CONFIG": f"{d}/none.env", **extra})
            r = subprocess.run(["bash", script], env=env, capture_output=True, text=True, timeout=30)
            got = calls(d)
            if r.returncode != 0 or not got or not got[0].startswith("smddp-diag preflight"):
                fail(f"{extra}: exit {r.returncode}, calls {got}\n{r.stderr}")
    print(f"prolog: {len(cases)} cases drain exactly when enabled and unhealthy")


def test_netns_bad_settings():
    """netns-cluster.sh and regret.sh: settings that are not what they document are one line and 64, before anything is made
    (a 20-digit number would wrap in bash arithmetic, 08 would be read as octal)."""
    cluster, regret = "scripts/netns-cluster.sh", "scripts/netns/regret.sh"
    cases = [(cluster, {"SMDDP_NETNS_NET": "99999999999999999999"}, ["status"], "SMDDP_NETNS_NET"),
             (cluster, {"SMDDP_NETNS_NET": "08x"}, ["down"], "SMDDP_NETNS_NET"),
             (cluster, {"SMDDP_NETNS_NET": "256"}, ["up", "2"], "SMDDP_NETNS_NET"),
             (cluster, {"SMDDP_NETNS_NAME": "Bad Name"}, ["status"], "SMDDP_NETNS_NAME"),
             (cluster, {}, ["up", "2", "--rate", "99999999999999999999gbit"], "--rate"),
             (cluster, {}, ["up", "2", "--rate", "1gbit", "--burst", "4096"], "--burst"),
             (cluster, {}, ["up", "2", "--rate", "1gbit", "--burst", "99999999999999999999"], "--burst"),
             (cluster, {}, ["up", "2", "--rate", "1gbit", "--burst", "0x10000"], "--burst"),
             (cluster, {}, ["up", "99999999999999999999"], "netns-cluster.sh up N"),
             # regret.sh checks its own settings before it brings up a cluster.
             (regret, {}, ["-w", "x"], "-w"),
             (regret, {}, ["-w", "99999999999999999999"], "-w"),
             (regret, {}, ["-w", "08"], "-w"),
             (regret, {}, ["-n", "0"], "-n"),
             (regret, {}, ["--small-iters", "0"], "--small-iters"),
             (regret, {}, ["--small-iters", "1e3"], "--small-iters"),
             (regret, {}, ["-e", "16MiB"], "-e"),
             (regret, {}, ["-e", "7"], "-e"),
             (regret, {}, ["-e", "999999999G"], "-e"),
             (regret, {}, ["--burst", "4096"], "--burst"),
             (regret, {}, ["--placements", "2y1"], "placement"),
             (regret, {}, ["--bench", "/"], "--bench"),  # a directory is not a program
             (regret, {}, ["--bench", "/bin/false"], "not smddp-bench"),
             (regret, {}, ["--bench", ARGS.bench, "--collectives", "allreduce all_reduce"], "collective 'all_reduce'")]
    for script, env, args, needle in cases:
        r = subprocess.run(["bash", os.path.join(ARGS.root, script), *args],
                           env=clean_env(PATH=os.environ["PATH"], **env), capture_output=True, text=True, timeout=30)
        if r.returncode != 64 or needle not in r.stderr:
            fail(f"{script} {env} {args}: exit {r.returncode} {r.stderr!r}; expected 64 naming {needle}")
    print(f"{len(cases)} bad settings refused with 64")


def test_shellcheck():
    """shellcheck -x passes on every script under scripts/."""
    scripts = []
    for path in sorted(glob.glob(os.path.join(ARGS.root, "scripts/**/*"), recursive=True)):
        if not os.path.isfile(path):
            continue
        with open(path, "rb") as f:
            first = f.readline()
        if path.endswith((".sh", ".sbatch")) or (first.startswith(b"#!") and b"sh" in first.split(b"/")[-1]):
            scripts.append(path)
    if len(scripts) < 5:
        fail(f"found only {scripts}")
    r = subprocess.run(["shellcheck", "-x", *scripts], cwd=ARGS.root, capture_output=True, text=True, timeout=120)
    if r.returncode != 0:
        fail(f"shellcheck:\n{r.stdout}{r.stderr}")
    print(f"shellcheck clean: {len(scripts)} scripts")


def perf_report(*args):
    return subprocess.run([os.path.join(ARGS.root, "scripts/perf-report.sh"), *args], cwd=ARGS.root,
                          capture_output=True, text=True, timeout=60)


def test_perf_report_check():
    """docs/performance.md is what docs/perf/scenarios.json gives, under 300 lines, every journal link resolves."""
    r = perf_report("--check")
    if r.returncode != 0:
        fail(f"perf-report.sh --check exit {r.returncode}:\n{r.stdout}{r.stderr}")
    print(r.stdout.strip())


def test_perf_report_stale():
    """--check fails on a page edited by hand, a page of 300 lines, a journal section that is gone and bad data;
    bad usage is one line and 64."""
    data_path = os.path.join(ARGS.root, "docs/perf/scenarios.json")
    with open(data_path) as f:
        data = json.load(f)
    with tempfile.TemporaryDirectory() as d:
        doc, data_file, history = (os.path.join(d, n) for n in ("performance.md", "scenarios.json", "history.md"))
        shutil.copy(os.path.join(ARGS.root, "docs/performance-history.md"), history)

        def check(scenarios):
            write(data_file, json.dumps({"scenarios": scenarios}))
            return perf_report("--check", "--data", data_file, "--doc", doc, "--history", history)

        def expect_fail(what, r, needle):
            if r.returncode != 1 or needle not in r.stderr:
                fail(f"{what}: exit {r.returncode}, wanted 1 with {needle!r}:\n{r.stdout}{r.stderr}")

        r = perf_report("--write", "--data", data_path, "--doc", doc)
        if r.returncode != 0:
            fail(f"--write: {r.stdout}{r.stderr}")
        good = check(data["scenarios"])
        if good.returncode != 0:
            fail(f"a fresh page does not pass: {good.stdout}{good.stderr}")
        with open(doc) as f:
            page = f.read()
        first = data["scenarios"][0]["rows"][0]
        write(doc, page.replace(f"| {first['ratio']} |", "| 9.99x |", 1))
        expect_fail("a ratio edited by hand", check(data["scenarios"]), "9.99x")
        write(doc, page)
        many = [dict(s, id=f"{s['id']}-{k}", title=f"{s['title']} {k}") for k in range(3) for s in data["scenarios"]]
        expect_fail("a page of 300 lines or more", check(many), "the limit is under 300")
        gone = [dict(data["scenarios"][0], history=["No such section"])] + data["scenarios"][1:]
        expect_fail("a link to a missing journal section", check(gone), "No such section")
        bad = [dict(data["scenarios"][0], rows=[dict(first, run="zz")])] + data["scenarios"][1:]
        expect_fail("a row naming no run", check(bad), "no run 'zz'")
        r = perf_report("--chek")
        if r.returncode != 64 or len(r.stderr.strip().splitlines()) != 1:
            fail(f"bad usage: exit {r.returncode}, stderr {r.stderr!r}")
    print("perf-report.sh --check catches edits, length, missing sections, bad data; usage 64")


def main():
    global ARGS
    p = argparse.ArgumentParser()
    p.add_argument("--root", required=True)
    p.add_argument("--bench")
    p.add_argument("--netns-cluster")
    p.add_argument("test")
    ARGS = p.parse_args()
    fn = globals().get("test_" + ARGS.test)
    if not fn:
        fail(f"unknown test {ARGS.test}")
    fn()


if __name__ == "__main__":
    main()
