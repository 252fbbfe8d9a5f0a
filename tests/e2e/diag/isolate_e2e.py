#!/usr/bin/env python3
"""smddp-diag isolate and the baseline gate, on a network-namespace cluster.

Usage: isolate_e2e.py --cluster PATH --diag PATH --bench PATH CASE

Each case brings up its own 4-host cluster (scripts/netns-cluster.sh, own
name and /24) and tears it down. They need root (CAP_NET_ADMIN); elsewhere
they print SKIP and exit 77. Sizes are small so each run takes seconds; no
case asserts an absolute timing or bandwidth.

Cases:
  isolate_throttled  one host's link shaped by tc (tbf): exactly that host is
      named, exit 1, JSON + drain line + textfile agree
  isolate_stopped    one rank SIGSTOPped after start: its host is named within
      the run's bound (rounds x per-round bound), the job ends; no other host
      is named (its partner, whose requests stay in flight, is tested no more)
  isolate_healthy    the unshaped cluster, 5 runs in a row with the default
      limits (one with 2 ranks per host, one bisecting): nobody named, exit 0
      (a run that names a host is run once more; named twice in a row fails)
  baseline_gate      smddp-diag baseline learn from two runs; smddp-bench
      --baseline passes that baseline (generous tolerance) and fails, exit 2,
      with the rows named, against one 100x faster than measured
  baseline_profiles  every shipped profile loads; the instance profiles'
      baselines load in smddp-bench --baseline (refused, 64, on host memory:
      none of their GPU entries could judge a row)
  isolate_bad_input  bad flags, topology and result files: one line, exit 64,
      nothing written (no namespaces needed)
  isolate_counters   2 hosts, each with its own fake sysfs tree; a thread
      raises one error counter of host 1 during the run: host 1 is named
      ("fabric_counters: moved during the isolate tests: ..."), host 0 is
      healthy, the JSON carries both hosts' deltas; without the writer both
      are healthy
  isolate_topology   4 hosts in 2 racks of a --topology table: round 1 pairs
      inside the racks, round 2 across; a host the file lacks: exit 64, one
      line from rank 0
  isolate_corruption  SMDDP_DIAG_FAULT=corrupt@HOST: that host's ranks flip a
      bit of what they send in the allreduce probe; exactly HOST is named
      for it, SMDDP-ISOLATE-CORRUPTION (replace) in the line, JSON and drain
      reason (another host named slow by this noise is allowed);
      each wrong test names rank, element, expected and received bits; at 1
      and 2 ranks per host
  isolate_model      2 hosts, --model with a synthetic smddp-model file: one
      predicting far more than loopback gives names both hosts (the model
      and its prediction in the reason), exit 1; one predicting far less:
      healthy, exit 0; the same for preflight's allreduce_busbw; a missing
      file, a bad tolerance, a model with no network data: one line, exit 64
"""
import argparse
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "bench"))
import rank_processes  # noqa: E402  (tests/e2e/rank_processes.py)
import counters_e2e  # noqa: E402  (tests/e2e/bench: the fake sysfs tree and its writer)
import netns_cluster  # noqa: E402  (tests/e2e/netns_cluster.py)
from netns_cluster import SKIP, namespaces_possible  # noqa: E402

ARGS = None
# Small, quick probes; the per-round bound is round-timeout + 2 + 0.2 x round-timeout.
QUICK = ["--bytes", "1MiB", "--iterations", "4", "--warmup", "1", "--stream-bytes", "256KiB", "--window", "4",
         "--stream-iterations", "4", "--round-timeout", "10"]
# Every case judges with isolate's defaults (3 MADs and 25 % below the
# median, MAD at least 10 % of it, 2 retries judged against their own round):
# the healthy hosts of these shared, noisy cores vary by 20-50 % between tests
# and must still pass.


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


def Cluster(name, net, hosts=4):
    return netns_cluster.Cluster(ARGS.cluster, name, net, hosts)


def isolate_args(np, per_host, *extra):
    return ["-np", str(np), "--npernode", str(per_host), ARGS.diag, "isolate", *QUICK, *extra]


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


def test_isolate_throttled():
    namespaces_possible()
    with Cluster("iso1", 231) as c, tempfile.TemporaryDirectory() as d:
        c.throttle(2)
        out = os.path.join(d, "isolate.json")
        prom = os.path.join(d, "isolate.prom")
        r = c.run(*isolate_args(4, 1, "--json", out, "--print-drain", "--prom-textfile", prom))
        bad, good = named_hosts(r.stdout)
        if r.returncode != 1 or set(bad) != {c.host(2)} or len(good) != 3:
            fail(f"want exactly {c.host(2)} named and exit 1; exit {r.returncode}\n{r.stdout}\n{r.stderr[-3000:]}")
        if not re.search(r"isolate: .*(busbw|bandwidth) [0-9.]+ GB/s", bad[c.host(2)]):
            fail(f"the reason gives no numbers: {bad[c.host(2)]}")
        if f"nodename={c.host(2)}" not in r.stdout:
            fail(f"no drain command for {c.host(2)}:\n{r.stdout}")
        doc = json.load(open(out))
        unhealthy = [n["host"] for n in doc["nodes"] if not n["healthy"]]
        if unhealthy != [c.host(2)] or doc["isolate"]["rounds"] < 2:
            fail(f"JSON: unhealthy {unhealthy}, rounds {doc['isolate']['rounds']}")
        if "smddp_preflight_healthy 1" not in open(prom).read():
            fail("rank 0's host is healthy but its textfile says otherwise")
        print(f"named {c.host(2)} in {doc['isolate']['rounds']} rounds: {bad[c.host(2)]}")


def test_isolate_stopped():
    namespaces_possible()
    with Cluster("iso2", 232) as c:
        victim = 3
        # Default limits: the victim's partner, whose requests to it stay in
        # flight, is tested no more, so neither it nor a host that would
        # have met it may be named.
        p = subprocess.Popen(c.command(*isolate_args(4, 1)), env=c.env, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
        # Rank 0 announces the first round once every rank has joined.
        t_start = time.time()
        for line in p.stderr:
            if "round 1:" in line:
                break
        pid = None
        for pid_, rank in ((q, rank_processes.launcher_rank(q)) for q in rank_processes.processes(ARGS.diag, False)):
            if rank == victim:
                pid = pid_
        if pid is None:
            p.kill()
            fail("rank 3 not found")
        os.kill(pid, signal.SIGSTOP)
        t0 = time.time()
        # Rounds: at most 2 ceil(log2 4) + 4 = 8, each at most 10 + 2 + 2 = 14 s, and a 1 s grace.
        bound = 8 * 14 + 1
        try:
            stdout, stderr = p.communicate(timeout=bound + 20)
        except subprocess.TimeoutExpired:
            p.kill()
            fail(f"isolate did not end within {bound + 20} s of the SIGSTOP")
        elapsed = time.time() - t0
        bad, good = named_hosts(stdout)
        others = {c.host(i) for i in range(4) if i != victim}
        if p.returncode != 1 or set(bad) != {c.host(victim)} or good != others:
            fail(f"want {c.host(victim)} named, exit 1; exit {p.returncode}\n{stdout}\n{stderr[-3000:]}")
        if "did not answer" not in bad[c.host(victim)] or "rank 3" not in bad[c.host(victim)]:
            fail(f"the reason does not name the silent rank: {bad[c.host(victim)]}")
        if elapsed > bound:
            fail(f"ended {elapsed:.1f} s after the SIGSTOP, bound {bound} s")
        print(f"named {c.host(victim)} {elapsed:.1f} s after the SIGSTOP (bound {bound} s, started {t0 - t_start:.1f} s in)")


def test_isolate_corruption():
    namespaces_possible()
    with Cluster("iso8", 238) as c, tempfile.TemporaryDirectory() as d:
        bad_host = c.host(1)
        fault = {"SMDDP_DIAG_FAULT": f"corrupt@{bad_host}"}
        # Every rank carries the same setting; only bad_host's ranks flip a
        # bit of what they send. One rank per host, then two (a node's
        # ranks in one ring).
        for per_host in (1, 2):
            out = os.path.join(d, f"isolate{per_host}.json")
            r = c.run("-x", "SMDDP_DIAG_FAULT", *isolate_args(4 * per_host, per_host, "--json", out, "--print-drain"),
                      extra_env=fault)
            bad, good = named_hosts(r.stdout)
            # Exactly bad_host for corruption. On these shared cores a
            # healthy host is now and then also named slow (as
            # isolate_healthy allows); that is another verdict, not this one.
            corrupt = {h for h, why in bad.items() if "SMDDP-ISOLATE-CORRUPTION" in why}
            slow = {h for h, why in bad.items() if "[SMDDP-ISOLATE-SLOW-" in why}
            if r.returncode != 1 or corrupt != {bad_host} or set(bad) - corrupt - slow or len(good) + len(bad) != 4:
                fail(f"{per_host}/host: want exactly {bad_host} named for corruption, exit 1; exit {r.returncode}\n{r.stdout}\n{r.stderr[-3000:]}")
            if slow:
                print(f"{per_host}/host: also named slow on these shared cores: {sorted(slow)}")
            why = bad[bad_host]
            if "silent data corruption: wrong results with 2 partners" not in why or "[SMDDP-ISOLATE-CORRUPTION, replace]" not in why:
                fail(f"{per_host}/host: not a corruption verdict: {why}")
            if f'nodename={bad_host} state=drain reason="smddp:SMDDP-ISOLATE-CORRUPTION' not in r.stdout:
                fail(f"{per_host}/host: no drain line with the code:\n{r.stdout}")
            doc = json.load(open(out))
            node = next(n for n in doc["nodes"] if n["host"] == bad_host)
            check = node["checks"][0]
            if (check["code"], check["action"]) != ("SMDDP-ISOLATE-CORRUPTION", "replace"):
                fail(f"{per_host}/host: JSON code {check['code']}, action {check['action']}")
            # Each wrong test names the rank that saw it, the element and the bits.
            wrong = [t for t in doc["isolate"]["tests"] if t["corruption"]]
            located = re.compile(r"rank \d+ \(\S+\): allreduce of \d+ ranks: wrong results in \d+ of \d+ elements; "
                                 r"first element \d+: expected 0x[0-9a-f]{8}, received 0x[0-9a-f]{8} \(bits 0 differ\)")
            if not wrong or any(bad_host not in t["nodes"] or not located.match(t["corruption"]) for t in wrong):
                fail(f"{per_host}/host: the wrong tests: {[(t['nodes'], t['corruption']) for t in wrong]}")
            if any(t["error"] for t in wrong):
                fail(f"{per_host}/host: a wrong result also failed its test: {[t['error'] for t in wrong]}")
            print(f"{per_host}/host: {bad_host} named in {doc['isolate']['rounds']} rounds: {why}")


def healthy_verdict(a, r):
    """None when the run named nobody, else what went wrong."""
    if "--json" in a:
        doc = json.loads(r.stdout) if r.stdout.strip() else {"nodes": [], "isolate": {"tests": []}}
        kinds = {t["kind"] for t in doc["isolate"]["tests"]}
        if r.returncode != 0 or not doc["nodes"] or not all(n["healthy"] for n in doc["nodes"]) or "group" not in kinds:
            named = {n["host"]: n["checks"][0]["reason"] for n in doc["nodes"] if not n["healthy"]}
            return f"exit {r.returncode}, kinds {kinds}, named {named}\n{r.stderr[-2000:]}"
        return None
    bad, good = named_hosts(r.stdout)
    if r.returncode != 0 or bad or len(good) != 4:
        return f"exit {r.returncode}, named {bad}\n{r.stdout}\n{r.stderr[-3000:]}"
    return None


def test_isolate_healthy():
    namespaces_possible()
    with Cluster("iso3", 233) as c:
        # The default limits, over noisy shared cores, several runs in a row.
        # Four hosts on 2 CPUs: about 1 run in 30 finds one host (or link)
        # 30-50 % below the fleet for the whole run, its re-measurements
        # included, with probes of 4 or 16 MiB alike. Such a run is run
        # again after a pause, twice at most: a healthy fleet named three
        # times in a row fails. Once (a CI run, 2026-12-07) the link between
        # the two hosts of one CPU (h1-h3) was named in three runs of four
        # within 16 s, and then in none of 70 runs on the same build.
        runs = [isolate_args(4, 1), isolate_args(4, 1), isolate_args(8, 2), isolate_args(4, 1),
                isolate_args(4, 1, "--bisect-min-nodes", "4", "--json", "-")]
        reruns = 0
        for i, a in enumerate(runs):
            named = []
            while (verdict := healthy_verdict(a, c.run(*a))) is not None:
                named.append(verdict)
                if len(named) == 3:
                    fail(f"run {i}, three times in a row:\n" + "\nagain: ".join(named))
                reruns += 1
                print(f"run {i} named a host, run again in 5 s: {verdict.splitlines()[0]}")
                time.sleep(5)
        print(f"{len(runs)} runs: nobody named ({reruns} run again)")


def test_baseline_gate():
    namespaces_possible()
    with Cluster("iso4", 234, hosts=2) as c, tempfile.TemporaryDirectory() as d:
        bench = ["-np", "4", "--npernode", "2", ARGS.bench, "-b", "64K", "-e", "1M", "-f", "4", "-n", "5", "-w", "1",
                 "-c", "0", "-q"]
        runs = []
        for i in range(2):
            path = os.path.join(d, f"run{i}.json")
            r = c.run(*bench, "-J", path)
            if r.returncode != 0:
                fail(f"bench run {i}: exit {r.returncode}\n{r.stderr[-2000:]}")
            runs.append(path)
        learned = os.path.join(d, "baseline.yaml")
        r = subprocess.run([ARGS.diag, "baseline", "learn", *runs, "-o", learned, "--tolerance", "0.9"],
                           capture_output=True, text=True, timeout=30)
        if r.returncode != 0:
            fail(f"baseline learn: exit {r.returncode}: {r.stderr}")
        text = open(learned).read()
        entries = re.findall(r"busbw_gbps: ([0-9.e+-]+)", text)
        # Out-of-place and in-place rows of each size share an entry: 2 runs x 2 rows.
        if len(entries) != 3 or text.count("samples: 4") != 3:
            fail(f"want 3 entries (64K, 256K, 1M) of 4 samples each:\n{text}")
        r = c.run(*bench, "--baseline", learned)
        if r.returncode != 0:
            fail(f"its own baseline (tolerance 90 %) failed: exit {r.returncode}\n{r.stderr[-2000:]}")
        if not re.search(r"(\d+) of \1 rows judged, 0 below", r.stderr):
            fail(f"no gate summary: {r.stderr[-2000:]}")
        fast = os.path.join(d, "fast.yaml")
        with open(fast, "w") as f:
            f.write(re.sub(r"busbw_gbps: ([0-9.e+-]+)", lambda m: f"busbw_gbps: {float(m.group(1)) * 100:g}",
                           text.replace("tolerance: 0.9", "tolerance: 0.25")))
        r = c.run(*bench, "--baseline", fast)
        below = re.findall(r"smddp-bench: SMDDP-BENCH-BELOW-BASELINE below the baseline: (allreduce float (\d+) B.*)", r.stderr)
        if r.returncode != 2 or len(below) != 6 or sorted({int(b[1]) for b in below}) != [65536, 262144, 1048576]:
            fail(f"want exit 2 naming the 3 rows; exit {r.returncode}\n{r.stderr[-3000:]}")
        # A malformed baseline is a usage error before any work.
        bad = os.path.join(d, "bad.yaml")
        with open(bad, "w") as f:
            f.write("baseline:\n  entries:\n    - {collective: allreduce, busbw: 3}\n")
        r = c.run(*bench, "--baseline", bad)
        if r.returncode != 64 or "unknown key 'busbw'" not in r.stderr or r.stderr.count("unknown key") != 1:
            fail(f"malformed baseline: exit {r.returncode}\n{r.stderr[-2000:]}")
        print(f"learned {len(entries)} entries; own baseline passes; 100x baseline fails {len(below)} rows with exit 2")


def test_isolate_bad_input():
    """Bad flags and files: one line, exit 64, nothing written; no namespaces needed."""
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "out.yaml")
        notjson = os.path.join(d, "x.json")
        with open(notjson, "w") as f:
            f.write("{\"tool\": \"x\"}")
        cases = [
            (["isolate", "--mad-k", "0"], "--mad-k must be positive"),
            (["isolate", "--bytes", "lots"], "--bytes 'lots'"),
            (["isolate", "--round-timeout", "0"], "--round-timeout '0': not above 0"),
            (["isolate", "--round-timeout", "0x10"], "--round-timeout '0x10': hexadecimal"),
            (["isolate"], "run it under mpirun or srun"),
            (["isolate", "--profile", "no-such-profile"], "unknown profile 'no-such-profile'"),
            (["isolate", "--topology", os.path.join(d, "none.txt")], "--topology " + os.path.join(d, "none.txt") + ": cannot read"),
            (["isolate", "--topology", notjson], "without an \"Instances\" list"),
            (["isolate", "--racks", "4"], "--racks is for --simulate"),
            (["isolate", "--seed", "0x1"], "--seed '0x1': hexadecimal"),
            (["baseline", "learn", os.path.join(d, "none.json"), "-o", out], "cannot read"),
            (["baseline", "learn", notjson, "-o", out], "neither smddp-bench JSON ('rows') nor nccl-tests JSON ('results')"),
            (["baseline", "learn", notjson, "-o", out, "--tolerance", "1.5"], "--tolerance must be a fraction"),
        ]
        for args, want in cases:
            env = {k: v for k, v in os.environ.items() if not k.startswith(("OMPI_COMM_WORLD", "PMIX_", "PMI_"))}
            r = subprocess.run([ARGS.diag, *args], capture_output=True, text=True, timeout=30, env=env)
            err = r.stderr.strip().splitlines()
            if r.returncode != 64 or len(err) != 1 or want not in err[0] or r.stdout or os.path.exists(out):
                fail(f"smddp-diag {' '.join(args)}: want exit 64, one line with {want!r}; exit {r.returncode}\n{r.stderr}{r.stdout}")
        print(f"{len(cases)} bad invocations: one line each, exit 64")


def test_baseline_profiles():
    """Every shipped profile loads, and the instance profiles' baselines are valid gates."""
    pdir = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "diag", "profiles")
    names = sorted(f[:-5] for f in os.listdir(pdir) if f.endswith(".yaml"))
    with_baseline = 0
    for n in names:
        path = os.path.join(pdir, n + ".yaml")
        r = subprocess.run([ARGS.diag, "preflight", "--profile", path, "--checks", "memlock"], capture_output=True, text=True,
                           timeout=30)
        if r.returncode not in (0, 1):
            fail(f"profile {n}: exit {r.returncode}: {r.stderr}")
        if "baseline:" in open(path).read():
            with_baseline += 1
            # Its names are the engine's (the file loads), but host-memory smddp rows match none of its
            # GPU entries: a gate that could judge nothing is refused before any work, not passed.
            r = subprocess.run([ARGS.bench, "-b", "4K", "-e", "4K", "-n", "1", "-w", "0", "-q", "--baseline", path],
                               capture_output=True, text=True, timeout=60)
            lines = r.stderr.strip().splitlines()
            if r.returncode != 64 or len(lines) != 1 or "entries is for this run" not in lines[0] or r.stdout:
                fail(f"profile {n} as --baseline on host memory: exit {r.returncode}: {r.stderr[-1000:]}")
    if with_baseline < 10:
        fail(f"only {with_baseline} profiles carry a baseline")
    print(f"{len(names)} profiles load; {with_baseline} baselines gate")


def test_isolate_counters():
    namespaces_possible()
    with Cluster("iso5", 235, hosts=2) as c, tempfile.TemporaryDirectory() as d:
        roots = os.path.join(d, "roots")
        counters = {c.host(i): counters_e2e.fake_tree(os.path.join(roots, c.host(i))) for i in range(2)}
        # Each host reads its own tree: the wrapper picks it by host name.
        wrapper = os.path.join(d, "diag.sh")
        with open(wrapper, "w") as f:
            f.write(f'#!/bin/sh\nexec "{ARGS.diag}" --sysfs-root "{roots}/$(hostname)" "$@"\n')
        os.chmod(wrapper, 0o755)
        out = os.path.join(d, "isolate.json")
        # QUICK's rounds last a few ms, within which a writer thread starved
        # on these 2 busy CPUs may not tick (1 run in 3 under load): rounds of
        # 100 iterations leave it hundreds of its 1 ms periods.
        longer = {"--iterations": "100", "--stream-iterations": "100"}
        quick = [longer.get(QUICK[i - 1], v) if i else v for i, v in enumerate(QUICK)]
        args = ["-np", "2", "--npernode", "1", wrapper, "isolate", *quick, "--json", out]
        with counters_e2e.Writer(counters[c.host(1)]) as writer:
            r = c.run(*args)
        if writer.grown < 10:
            fail(f"the writer ticked {writer.grown} times during isolate: the machine starved it")
        bad, good = named_hosts(r.stdout)
        want = "fabric_counters: moved during the isolate tests: rdmap16s27/1/retrans_pkts +"
        if r.returncode != 1 or set(bad) != {c.host(1)} or want not in bad[c.host(1)] or good != {c.host(0)}:
            fail(f"want {c.host(1)} named for '{want}', exit 1; exit {r.returncode}\n{r.stdout}\n{r.stderr[-3000:]}")
        moved = json.load(open(out))["isolate"]["fabric_counters"]
        if moved.get(c.host(0)) != {"watched": 4, "moved": {}} or \
                list(moved.get(c.host(1), {}).get("moved", {})) != ["rdmap16s27/1/retrans_pkts"]:
            fail(f"isolate.fabric_counters: {moved}")
        print(f"named {c.host(1)}: {bad[c.host(1)]} (the writer ticked {writer.grown} times)")
        r = c.run(*args)
        bad, good = named_hosts(r.stdout)
        doc = json.load(open(out))
        checks = [ch for n in doc["nodes"] for ch in n["checks"] if ch["name"] == "fabric_counters"]
        if r.returncode != 0 or bad or len(checks) != 2 or any(ch["status"] != "pass" for ch in checks):
            fail(f"nothing moved: exit {r.returncode}, named {bad}, checks {checks}\n{r.stderr[-2000:]}")
        print(f"without the writer: {checks[0]['reason']}")


def test_isolate_topology():
    namespaces_possible()
    with Cluster("iso7", 237) as c, tempfile.TemporaryDirectory() as d:
        # Two racks of two, listed apart from their host order: round 1 pairs
        # inside the racks, round 2 across; a host the file lacks is 64.
        topo = os.path.join(d, "topology.txt")
        rack = {c.host(0): "nn-r1", c.host(1): "nn-r2", c.host(2): "nn-r1", c.host(3): "nn-r2"}
        with open(topo, "w") as f:
            f.write("# host layer1 layer3\n" + "".join(f"{h} nn-top {r}\n" for h, r in rack.items()))
        r = c.run(*isolate_args(4, 1, "--topology", topo, "--seed", "7", "--json", "-"))
        doc = json.loads(r.stdout) if r.stdout.strip().startswith("{") else {}
        if r.returncode not in (0, 1) or doc.get("isolate", {}).get("racks") != 2 or doc["isolate"]["seed"] != 7:
            fail(f"topology run: exit {r.returncode}\n{r.stdout[-2000:]}{r.stderr[-2000:]}")
        for t in doc["isolate"]["tests"]:
            if t["round"] > 2:
                continue
            same = rack[t["nodes"][0]] == rack[t["nodes"][1]]
            if same != (t["round"] == 1):
                fail(f"round {t['round']} paired {t['nodes']} ({'inside' if same else 'across'} a rack)")
        with open(topo, "w") as f:
            f.write(f"{c.host(0)} nn-r1\n{c.host(1)} nn-r2\n")
        r = c.run(*isolate_args(4, 1, "--topology", topo))
        lines = [ln for ln in r.stderr.splitlines() if ln.startswith("smddp-diag")]
        if r.returncode != 64 or len(lines) != 1 or f"no entry for host {c.host(2)}" not in lines[0] or r.stdout.strip():
            fail(f"a host missing from --topology: exit {r.returncode}\n{r.stdout}{r.stderr[-2000:]}")
        print(f"rounds 1-2 inside then across 2 racks; a missing host: {lines[0]}")


def write_model(path, beta_us_per_byte, network_data=True):
    """A synthetic smddp-model file (docs/model.md "The model file"): both
    tiers alike, bandwidth 10^-3/beta GB/s; without network_data the
    network tier has nothing determined."""
    def tier(undetermined):
        return {"alpha_us": 1.0, "beta_us_per_byte": beta_us_per_byte, "gamma_us_per_byte": 0, "overhead_us": 0,
                "bandwidth_gbps": 1e-3 / beta_us_per_byte, "undetermined": undetermined}
    none = {k: "no data" for k in ("alpha_us", "beta_us_per_byte", "gamma_us_per_byte", "overhead_us")}
    doc = {"format": "smddp-model", "version": 1, "equation": "synthetic",
           "tiers": {"shm": tier({}), "network": tier({} if network_data else none)},
           "schedule": {"shm_slot_bytes": 1048576, "dedicated_cores": True, "cma": True}, "fit": {}}
    with open(path, "w") as f:
        json.dump(doc, f)


def test_isolate_model():
    namespaces_possible()
    with Cluster("iso6", 236, hosts=2) as c, tempfile.TemporaryDirectory() as d:
        fast, slow, blind = (os.path.join(d, n) for n in ("fast.json", "slow.json", "blind.json"))
        write_model(fast, 1e-7)   # 10^4 GB/s per link: no loopback gives that
        write_model(slow, 1e-1)   # 0.01 GB/s
        write_model(blind, 1e-4, network_data=False)
        r = c.run(*isolate_args(2, 1, "--model", fast))
        bad, good = named_hosts(r.stdout)
        if r.returncode != 1 or len(bad) != 2 or not all("below the floor" in w and "model " + fast in w and "predicts" in w
                                                         for w in bad.values()):
            fail(f"fast model: want both hosts named with the model; exit {r.returncode}, named {bad}\n{r.stdout}{r.stderr[-2000:]}")
        r = c.run(*isolate_args(2, 1, "--model", slow, "--model-tolerance", "10", "--json", "-"))
        doc = json.loads(r.stdout) if r.stdout.strip().startswith("{") else {}
        floor = doc.get("isolate", {}).get("limits", {})
        if r.returncode != 0 or not doc or not all(n["healthy"] for n in doc["nodes"]) or "model " + slow not in str(floor.get("busbw_floor_by")):
            fail(f"slow model: want healthy with the model's floor; exit {r.returncode}\n{r.stdout[-2000:]}{r.stderr[-2000:]}")
        pre = ["-np", "2", "--npernode", "1", ARGS.diag, "preflight", "--profile", "local", "--checks", "allreduce_busbw"]
        r = c.run(*pre, "--model", fast)
        bad, _ = named_hosts(r.stdout)
        if r.returncode != 1 or len(bad) != 2 or not all("model " + fast in w for w in bad.values()):
            fail(f"preflight, fast model: want both hosts named; exit {r.returncode}, named {bad}\n{r.stdout}{r.stderr[-2000:]}")
        r = c.run(*pre, "--model", slow)
        if r.returncode != 0:
            fail(f"preflight, slow model: want exit 0; exit {r.returncode}\n{r.stdout}{r.stderr[-2000:]}")
        bad_runs = [
            (isolate_args(2, 1, "--model", os.path.join(d, "none.json")), "--model '"),
            (isolate_args(2, 1, "--model", slow, "--model-tolerance", "100"), "--model-tolerance must be"),
            (isolate_args(2, 1, "--model", blind), "no data for the network tier"),
            (pre + ["--model", blind], "no data for the network tier"),
            (pre + ["--model", os.path.join(d, "none.json")], "cannot read"),
        ]
        for args, want in bad_runs:
            r = c.run(*args)
            lines = [ln for ln in r.stderr.splitlines() if ln.startswith("smddp-diag")]
            if r.returncode != 64 or len(lines) != 1 or want not in lines[0] or r.stdout.strip():
                fail(f"{' '.join(args[4:])}: want exit 64, one line from rank 0 with {want!r}; exit {r.returncode}\n{r.stdout}{r.stderr[-2000:]}")
        print("model above the box: both hosts named (isolate, preflight); below: healthy; "
              f"{len(bad_runs)} bad models: exit 64")


def main():
    global ARGS
    ap = argparse.ArgumentParser()
    ap.add_argument("--cluster", required=True)
    ap.add_argument("--diag", required=True)
    ap.add_argument("--bench", required=True)
    ap.add_argument("case")
    ARGS = ap.parse_args()
    ARGS.diag, ARGS.bench = os.path.abspath(ARGS.diag), os.path.abspath(ARGS.bench)
    fn = globals().get("test_" + ARGS.case)
    if not fn:
        fail(f"unknown case {ARGS.case}")
    fn()
    print("PASS")


if __name__ == "__main__":
    main()
