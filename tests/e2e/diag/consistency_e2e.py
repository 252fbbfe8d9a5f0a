#!/usr/bin/env python3
"""preflight's consistency check and golden files, on a network-namespace cluster.

Usage: consistency_e2e.py --cluster PATH --diag PATH CASE

Each cluster case brings up its own 4-host cluster (scripts/netns-cluster.sh,
own name and /24) and tears it down; they need root (CAP_NET_ADMIN) and
print SKIP, exit 77, elsewhere. Every host runs the same binaries on the
same file system, so the cluster is identical unless a case makes it differ.

Cases:
  consistency_setting  MPMD launch, one rank given -x NCCL_PROTO=LL128:
      with one rank per host exactly that host is named (consistency, code
      config); with two ranks per host, that host is named for its ranks'
      disagreement
  consistency_version  SMDDP_DIAG_FAULT=nccl_version=2.18.1@HOST (the same
      on every rank): exactly HOST is named with the NCCL version, code config
  consistency_identical  2 ranks per host, every rank with its own
      CUDA_VISIBLE_DEVICES (and Open MPI's per-rank variables): every host
      Healthy, no finding
  golden_cluster  golden learn on the cluster, then preflight --golden
      passes; a golden file with another NCCL version fails every host
      naming the field; a setting the golden file does not list fails too
  golden_bad_input  truncated, wrong types, huge, a FIFO, missing: preflight
      --golden prints one line and exits 64, golden learn refuses a bad -o;
      alone (no mpirun), learn then --golden passes (no namespaces needed)
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import netns_cluster  # noqa: E402  (tests/e2e/netns_cluster.py)
from netns_cluster import SKIP, namespaces_possible  # noqa: E402

ARGS = None
CHECKS = ["--checks", "rank_reachability,consistency"]


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


def Cluster(name, net, hosts=4):
    return netns_cluster.Cluster(ARGS.cluster, name, net, hosts, env={"SMDDP_TIMEOUT": "60"})


def preflight(*extra):
    return [ARGS.diag, "preflight", "--profile", "local", *CHECKS, *extra]


def mpmd(contexts, *extra):
    """mpirun's MPMD words: contexts of (hosts, ranks, mpirun options), each
    placed with --host (a global --npernode does not spread MPMD contexts
    over the hosts: every context starts on the first one)."""
    words = []
    for hosts, n, opts in contexts:
        words += ([":"] if words else []) + ["-np", str(n), "--host", hosts, *opts, *preflight(*extra)]
    return words


def named_hosts(stdout):
    """{host: reason} of the ERROR lines; the set of Healthy hosts."""
    bad, good = {}, set()
    for line in stdout.splitlines():
        m = re.match(r"^(\S+) \| (Healthy|ERROR: (.*))$", line)
        if m:
            if m.group(2) == "Healthy":
                good.add(m.group(1))
            else:
                bad[m.group(1)] = m.group(3)
    return bad, good


def consistency_of(report, host):
    for n in report["nodes"]:
        if n["host"] == host:
            return next(c for c in n["checks"] if c["name"] == "consistency")
    fail(f"{host} not in the report")


def expect_named(p, c, bad_host, words, report=None, what=""):
    bad, good = named_hosts(p.stdout)
    others = {c.host(i) for i in range(c.hosts)} - {bad_host}
    if p.returncode != 1 or set(bad) != {bad_host} or good != others:
        fail(f"{what}: want exit 1 and only {bad_host} named; got exit {p.returncode}\n{p.stdout}\n{p.stderr}")
    for w in words:
        if w not in bad[bad_host]:
            fail(f"{what}: {w!r} not in {bad[bad_host]!r}")
    if report:
        with open(report) as f:
            r = json.load(f)
        got = consistency_of(r, bad_host)
        if got["status"] != "fail" or (got.get("code"), got.get("action")) != ("SMDDP-CONFIG-MISMATCH", "config"):
            fail(f"{what}: {bad_host}'s consistency result is not a config failure: {got}")
        for h in others:
            if consistency_of(r, h)["status"] != "pass":
                fail(f"{what}: {h} did not pass: {consistency_of(r, h)}")


def test_consistency_setting():
    namespaces_possible()
    with Cluster("cons1", 210) as c, tempfile.TemporaryDirectory() as d:
        report = os.path.join(d, "r.json")
        # MPMD: ranks 0, 2, 3 alike, rank 1 (host 1) with NCCL_PROTO=LL128.
        p = c.run(*mpmd([(c.host(0), 1, []), (c.host(1), 1, ["-x", "NCCL_PROTO=LL128"]),
                         (f"{c.host(2)},{c.host(3)}", 2, [])], "--json", report))
        expect_named(p, c, c.host(1), ["consistency:", "NCCL_PROTO=LL128 (3 of 4 nodes: unset)"], report, "one rank per host")
        # The advice table speaks too, on stderr: NCCL discourages NCCL_PROTO.
        if "warning: 1 of 4 node(s)" not in p.stderr or "NCCL_PROTO=LL128" not in p.stderr:
            fail(f"no advice about NCCL_PROTO on stderr:\n{p.stderr}")
        # Two ranks per host: rank 5 (host 2) differs from its host's rank 4.
        two = [(f"{c.host(0)}:2,{c.host(1)}:2", 4, []), (f"{c.host(2)}:2", 1, []),
               (f"{c.host(2)}:2", 1, ["-x", "NCCL_PROTO=LL128"]), (f"{c.host(3)}:2", 2, [])]
        p = c.run(*mpmd(two, "--json", report))
        expect_named(p, c, c.host(2), ["ranks disagree on NCCL_PROTO: unset on rank 4; LL128 on rank 5"], report, "two ranks per host")
    print("PASS consistency_setting")


def test_consistency_version():
    namespaces_possible()
    with Cluster("cons2", 211) as c, tempfile.TemporaryDirectory() as d:
        report = os.path.join(d, "r.json")
        fault = f"nccl_version=2.18.1@{c.host(2)}"
        p = c.run("--npernode", "1", "-np", "4", "-x", "SMDDP_DIAG_FAULT", *preflight("--json", report),
                  extra_env={"SMDDP_DIAG_FAULT": fault})
        expect_named(p, c, c.host(2), ["consistency: nccl 2.18.1 (3 of 4 nodes: "], report, "NCCL version")
        with open(report) as f:
            finding = consistency_of(json.load(f), c.host(2))["values"]["findings"][0]
        if finding["field"] != "nccl" or finding["value"] != "2.18.1":
            fail(f"finding: {finding}")
    print("PASS consistency_version")


def test_consistency_identical():
    namespaces_possible()
    with Cluster("cons3", 212) as c, tempfile.TemporaryDirectory() as d:
        report = os.path.join(d, "r.json")
        # Each rank its own GPU, as a launcher gives them.
        p = c.run(*mpmd([(f"{c.host(r // 2)}:2", 1, ["-x", f"CUDA_VISIBLE_DEVICES={r % 2}", "-x", "NCCL_DEBUG=WARN"])
                         for r in range(8)], "--json", report))
        bad, good = named_hosts(p.stdout)
        if p.returncode != 0 or bad or len(good) != 4:
            fail(f"identical cluster: want every host Healthy, exit 0; got exit {p.returncode}\n{p.stdout}\n{p.stderr}")
        with open(report) as f:
            r = json.load(f)
        for n in r["nodes"]:
            v = consistency_of(r, n["host"])["values"]
            if v["settings"].get("NCCL_DEBUG") != "WARN" or not v["facts"].get("kernel"):
                fail(f"{n['host']}: the settings and facts were not gathered: {v}")
    print("PASS consistency_identical")


def test_golden_cluster():
    namespaces_possible()
    with Cluster("cons4", 213) as c, tempfile.TemporaryDirectory() as d:
        golden = os.path.join(d, "golden.json")
        env = ["-x", "FI_PROVIDER=tcp"]
        # netns-cluster.sh gives every run its own SMDDP_NETNS_RUN token: a per-job value, allowed to be anything.
        p = c.run("--npernode", "1", "-np", "4", *env, ARGS.diag, "golden", "learn", "-o", golden, "--ignore", "SMDDP_NETNS_RUN")
        if p.returncode != 0 or not os.path.exists(golden):
            fail(f"golden learn: exit {p.returncode}\n{p.stdout}\n{p.stderr}")
        with open(golden) as f:
            g = json.load(f)
        if (g["env"].get("FI_PROVIDER") != "tcp" or g["env"].get("SMDDP_NETNS_RUN") != ["*", None] or "nccl" not in g["fields"]
                or g["learned"]["nodes"] != 4):
            fail(f"learned golden file: {g}")
        p = c.run("--npernode", "1", "-np", "4", *env, *preflight("--golden", golden))
        bad, good = named_hosts(p.stdout)
        if p.returncode != 0 or bad or len(good) != 4:
            fail(f"--golden on the cluster it was learned on: exit {p.returncode}\n{p.stdout}\n{p.stderr}")
        # Another NCCL version in the golden file: every host fails, naming the field.
        g["fields"]["nccl"] = "1.0.*"
        other = os.path.join(d, "other.json")
        with open(other, "w") as f:
            json.dump(g, f)
        p = c.run("--npernode", "1", "-np", "4", *env, *preflight("--golden", other))
        bad, _ = named_hosts(p.stdout)
        if p.returncode != 1 or len(bad) != 4 or not all(f"(golden {other}: 1.0.*)" in why and "nccl " in why for why in bad.values()):
            fail(f"--golden with another NCCL: exit {p.returncode}\n{p.stdout}\n{p.stderr}")
        # A setting the golden file does not list: every host fails, naming it.
        p = c.run("--npernode", "1", "-np", "4", *env, "-x", "NCCL_DEBUG=INFO", *preflight("--golden", golden))
        bad, _ = named_hosts(p.stdout)
        if p.returncode != 1 or len(bad) != 4 or not all("NCCL_DEBUG=INFO (golden" in why for why in bad.values()):
            fail(f"--golden with an unlisted setting: exit {p.returncode}\n{p.stdout}\n{p.stderr}")
    print("PASS golden_cluster")


def run_diag(*args, env=None):
    return subprocess.run([ARGS.diag, *args], capture_output=True, text=True, timeout=60,
                          env=dict(os.environ, **(env or {})))


def test_golden_bad_input():
    with tempfile.TemporaryDirectory() as d:
        good = os.path.join(d, "good.json")
        # Alone: this node learned, then checked against itself.
        p = run_diag("golden", "learn", "-o", good)
        if p.returncode != 0:
            fail(f"golden learn alone: exit {p.returncode}\n{p.stderr}")
        p = run_diag("preflight", "--profile", "local", "--checks", "consistency", "--golden", good)
        if p.returncode != 0 or "| Healthy" not in p.stdout:
            fail(f"--golden alone against this node's own file: exit {p.returncode}\n{p.stdout}\n{p.stderr}")
        p = run_diag("preflight", "--profile", "local", "--checks", "consistency", "--golden", good,
                     env={"SMDDP_DIAG_FAULT": "nccl_version=0.0.1"})
        if p.returncode != 1 or "consistency: nccl 0.0.1 (golden" not in p.stdout:
            fail(f"--golden alone with another NCCL: exit {p.returncode}\n{p.stdout}\n{p.stderr}")
        text = open(good).read()
        cases = {
            "truncated.json": (text[: len(text) // 2], "not JSON"),
            "types.json": ('{"smddp_golden": 1, "fields": {"nccl": 2.21}}', "fields.nccl: expected a string"),
            "version.json": ('{"smddp_golden": "one"}', "smddp_golden: expected 1"),
            "env.json": ('{"smddp_golden": 1, "env": {"PATH": "/bin"}}', "not a compared setting"),
            "huge.json": ('{"smddp_golden": 1, "description": "' + "x" * (2 << 20) + '"}', "cannot read"),
        }
        for name, (content, want) in cases.items():
            path = os.path.join(d, name)
            with open(path, "w") as f:
                f.write(content)
            cases[name] = (path, want)
        fifo = os.path.join(d, "fifo")
        os.mkfifo(fifo)
        cases["fifo"] = (fifo, "cannot read")
        cases["missing"] = (os.path.join(d, "absent.json"), "cannot read")
        for name, (path, want) in cases.items():
            p = run_diag("preflight", "--profile", "local", "--golden", path)
            err = p.stderr.strip().splitlines()
            if p.returncode != 64 or len(err) != 1 or want not in err[0] or p.stdout:
                fail(f"--golden {name}: want exit 64 and one line with {want!r}; got exit {p.returncode}\n"
                     f"stdout: {p.stdout}\nstderr: {p.stderr}")
        # --golden with a profile that does not run consistency: nothing would judge it.
        p = run_diag("preflight", "--profile", "local", "--skip", "consistency", "--golden", good)
        if p.returncode != 64 or "consistency" not in p.stderr:
            fail(f"--golden without the check: exit {p.returncode}\n{p.stderr}")
        p = run_diag("golden", "learn", "-o", os.path.join(d, "no", "dir", "g.json"))
        if p.returncode != 64 or len(p.stderr.strip().splitlines()) != 1:
            fail(f"golden learn -o into a missing directory: exit {p.returncode}\n{p.stderr}")
        for fault in ("nccl_version=", "nccl_version=2.18.1@", "corrupt@", "corrupted"):
            p = run_diag("preflight", "--profile", "local", env={"SMDDP_DIAG_FAULT": fault})
            if p.returncode != 64 or "SMDDP_DIAG_FAULT" not in p.stderr:
                fail(f"SMDDP_DIAG_FAULT={fault}: exit {p.returncode}\n{p.stderr}")
    print("PASS golden_bad_input")


def main():
    global ARGS
    ap = argparse.ArgumentParser()
    ap.add_argument("--cluster", required=True)
    ap.add_argument("--diag", required=True)
    ap.add_argument("case")
    ARGS = ap.parse_args()
    ARGS.diag = os.path.abspath(ARGS.diag)
    ARGS.cluster = os.path.abspath(ARGS.cluster)
    fn = globals().get("test_" + ARGS.case)
    if not fn:
        fail(f"unknown case {ARGS.case}")
    fn()


if __name__ == "__main__":
    main()
