#!/usr/bin/env python3
"""Multi-host end-to-end tests on a network-namespace cluster.

Usage: multinode_e2e.py --cluster PATH --bench PATH --collectives PATH TEST

Each test brings up its own cluster with scripts/netns-cluster.sh (own name
and /24, so tests may run side by side), runs real binaries across the
"hosts" through `netns-cluster.sh run` (mpirun with an rsh agent that enters
the namespaces), checks what they print, and tears the cluster down. Where
namespaces cannot be created (no CAP_NET_ADMIN) the test prints SKIP with
the reason and exits 77, which CTest reports as skipped.

Tests:
  collectives_h{2,3}_{fabric,mpi}  every collective x algorithm, 2 ranks per
      host, checked against the reference (tests/mpi collectives test)
  kill_rank      SIGKILL of one rank mid-run over libfabric: bounded end
      with exit 3, the lost peer and its host named, nothing left behind
  link_down      a host's link taken down mid-run: every rank, on both sides,
      ends by its deadline; the first to time out names the peer and host it
      waited for (and aborts the job); nothing left behind
  hang_remote_{engine,watchdog}  2 hosts x 2 ranks, rank 3 (on the host
      other than rank 0's, not its first rank) stopped before call #N
      (SMDDP_TEST_STALL_AT): rank 0's stderr and -J "hang" name rank 3, its
      host and N for the whole job (the other host's records came over the
      hang report's channel); the engine's deadline, or the watchdog
      (--backend mpi, with SMDDP_STORE_BIND_ADDR naming rank 0's address);
      nothing left behind
  hang_remote_silent  the other host's first rank is the stopped one: rank 0
      names that host as the one that sent no report
  socket_count   8 hosts x 4 ranks under the default transport: sockets
      (no EFA), at most 10 connections per rank, counted from /proc
  socket_fallback  a host's socket listener out of reach: auto falls back to
      MPI on every rank with one line; --transport socket fails naming it
  tune_h2        smddp-model tune on 2 hosts x 2 ranks over libfabric tcp
      (1 Gbit/s links): the model file it writes has the network tier
      determined, the budget asked for recorded, the probe ended before the write
  link_probe     2 hosts x 2 ranks at 1 Gbit/s, the default transport: the
      --explain header names the setup probe's figures (a 1 Gbit/s link is
      under a quarter of the built-in figures' bandwidth), and the table
      differs from the one SMDDP_LINK_PROBE=0 gives (the built-in figures)
"""
import argparse
import glob
import json
import os
import re
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import rank_processes  # noqa: E402  (tests/e2e/rank_processes.py)
import netns_cluster  # noqa: E402  (tests/e2e/netns_cluster.py)
from netns_cluster import namespaces_possible as check_namespaces_possible  # noqa: E402

ARGS = None
SKIP = 77


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


def Cluster(name, net, hosts, *up_args):
    return netns_cluster.Cluster(ARGS.cluster, name, net, hosts, *up_args)


def processes_of(binary, ranks_only=True):
    """PIDs whose argv[0] is `binary`, with their MPI rank (see rank_processes)."""
    found = {}
    for pid in rank_processes.processes(binary, ranks_only):
        try:
            found[pid] = rank_processes.launcher_rank(pid)
        except (OSError, ValueError):
            continue
    return found


def shm_segments():
    return set(glob.glob("/dev/shm/smddp-*"))


def collectives(hosts, transport):
    """Every collective x algorithm across `hosts` namespaces, 2 ranks each."""
    index = {"fabric": 0, "mpi": 1, "socket": 2}[transport] + 3 * hosts
    with Cluster(f"mnc{index}", 180 + index, hosts) as c:
        np = 2 * hosts
        env = {"SMDDP_TRANSPORT": transport, "SMDDP_TIMEOUT": "30", "SMDDP_FABRIC_VERBOSE": "1"}
        if transport == "fabric":
            env["FI_PROVIDER"] = "tcp"
        # Across hosts the single-node algorithms decline, and with an odd
        # host count the power-of-two ones; every other one must run.
        declines = ARGS.decline_multinode + ("," + ARGS.decline_odd if np & (np - 1) else "")
        r = c.run("-np", str(np), "--npernode", "2", ARGS.collectives, "--counts", "0,1,7,10007",
                  "--expect-declined", declines, extra_env=env)
        out = r.stdout + r.stderr
        if r.returncode != 0:
            fail(f"exit {r.returncode}\n{out[-4000:]}")
        m = re.search(r"(\d+) ranks \((\d+) nodes\): (\d+) cases, \d+ algorithms ran, \d+ declined, (\d+) failed", out)
        if not m or m.group(1) != str(np) or m.group(2) != str(hosts) or m.group(4) != "0":
            fail(f"expected {np} ranks on {hosts} nodes and 0 failed:\n{out[-4000:]}")
        if int(m.group(3)) < 3000:
            fail(f"only {m.group(3)} cases ran")
        if f", transport {transport}" not in out:
            fail(f"the communicator did not open the {transport} transport:\n{out[-2000:]}")
        for algo in ("allreduce/sharded", "allreduce/hierarchical"):
            if f"declined: {algo}" in out:
                fail(f"{algo} declined across {hosts} hosts")
        used = re.findall(r"rank (\d+) on (\S+): fabric transport, provider (\S+), domain ([^,\s]+)", out)
        if transport == "fabric":
            if len(used) != np or {u[2] for u in used} != {"tcp;ofi_rxm"} or {u[3] for u in used} != {"eth0"}:
                fail(f"every rank should use tcp;ofi_rxm on the namespace's eth0: {used}")
            hostnames = {u[1] for u in used}
            if len(hostnames) != hosts:
                fail(f"expected {hosts} distinct hostnames, got {hostnames}")
        elif used:
            fail(f"SMDDP_TRANSPORT={transport} but the fabric transport was opened: {used}")
        print(f"{m.group(0)} over {transport}")


def test_collectives_h2_fabric():
    collectives(2, "fabric")


def test_collectives_h2_mpi():
    collectives(2, "mpi")


def test_collectives_h3_fabric():
    collectives(3, "fabric")


def test_collectives_h3_mpi():
    collectives(3, "mpi")


def test_collectives_h2_socket():
    collectives(2, "socket")


def test_collectives_h3_socket():
    collectives(3, "socket")


def test_many_pieces():
    """A step of 8192 pieces per peer (32 MiB ring steps in 4 KiB pieces)
    completes and is correct: posted all at once they never completed over
    tcp;ofi_rxm, so the transport keeps a bounded number in flight."""
    with Cluster("mnp", 225, 2) as c, tempfile.TemporaryDirectory() as d:
        for algo in ("ring", "halving_doubling"):
            out = os.path.join(d, f"{algo}.json")
            r = c.run("-np", "2", "--npernode", "1", ARGS.bench, "allreduce", "-b", "64M", "-e", "64M", "-n", "1",
                      "-w", "0", "-c", "1", "-T", "60", "--transport", "fabric", "--algorithm", algo, "-J", out,
                      extra_env={"FI_PROVIDER": "tcp", "SMDDP_FABRIC_MAX_MSG": "4K"}, timeout=150)
            if r.returncode != 0:
                fail(f"{algo}: exit {r.returncode}\n{(r.stdout + r.stderr)[-3000:]}")
            rows = json.load(open(out))["rows"]
            if not rows or any(row.get("wrong") != 0 for row in rows):
                fail(f"{algo}: expected rows with no wrong values: {rows}")
        print("64 MiB allreduce in 4 KiB pieces: ring and halving_doubling correct")


def start_bench(c, outdir, np, per_host, timeout_s, transport="fabric"):
    """A long allreduce sweep across the cluster; returns (Popen, json path)."""
    out = os.path.join(outdir, "out.json")
    cmd = c.command("--mca", "orte_abort_on_non_zero_status", "0", "--output-filename",
                    os.path.join(outdir, "ranks"), "-np", str(np), "--npernode", str(per_host),
                    ARGS.bench, "allreduce", "-b", "256K", "-e", "256M", "-f", "2", "-n", "50", "-w", "1",
                    "-T", str(timeout_s), "--transport", transport, "-J", out)
    env = dict(c.env, FI_PROVIDER="tcp")
    p = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 90
    while time.time() < deadline:  # a first row done: the ranks are mid-sweep
        try:
            if json.load(open(out))["rows"]:
                break
        except (OSError, ValueError, KeyError):
            pass
        if p.poll() is not None:
            fail(f"the benchmark ended early ({p.returncode}): {p.stderr.read()[-2000:]}")
        time.sleep(0.1)
    else:
        p.kill()
        fail("no row completed within 90 s")
    ranks = processes_of(ARGS.bench)
    if len(ranks) != np:
        p.kill()
        fail(f"expected {np} ranks running, found {ranks}")
    return p, ranks


def rank_stderr(outdir):
    text = ""
    for path in sorted(glob.glob(os.path.join(outdir, "ranks", "*", "rank.*", "stderr"))):
        text += open(path, errors="replace").read()
    return text


def check_nothing_left(before):
    time.sleep(1)
    if processes_of(ARGS.bench, ranks_only=False):
        fail(f"processes left behind: {processes_of(ARGS.bench, ranks_only=False)}")
    if shm_segments() - before:
        fail(f"shared memory left behind: {shm_segments() - before}")


def kill_case(hosts, per_host, victim, expect, transport="fabric"):
    before = shm_segments()
    net = 210 + per_host + (4 if transport == "socket" else 0)
    with Cluster(f"mnk{net - 210}", net, hosts) as c, tempfile.TemporaryDirectory() as d:
        p, ranks = start_bench(c, d, hosts * per_host, per_host, 20, transport)
        pid = next(pid for pid, rank in ranks.items() if rank == victim)
        os.kill(pid, 9)
        t0 = time.time()
        try:
            stdout, stderr = p.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            p.kill()
            fail("job did not end within 30 s of the kill (deadline 20 s)")
        elapsed = time.time() - t0
        messages = stderr + rank_stderr(d)
        if p.returncode != 3:
            fail(f"exit {p.returncode}, want 3 (lost rank)\n{messages[-3000:]}")
        if f"rank {victim} on " not in messages or f"(pid {pid}) was killed by signal 9" not in messages:
            fail(f"the killed rank's supervisor did not name it:\n{messages[-3000:]}")
        if not re.search(expect, messages):
            fail(f"no rank said /{expect}/:\n{messages[-3000:]}")
        line = re.search(r"smddp-bench: .*lost peer.*", messages).group(0)
        print(f"{hosts} hosts x {per_host}: ended {elapsed:.1f} s after the kill, exit {p.returncode}: {line}")
    check_nothing_left(before)


# The kill may land in a timed call or in the barrier between two: either names the peer.
IN_CALL = r"(?:allreduce|barrier)"


def test_kill_rank():
    check_namespaces_possible()
    # One rank per host: only the liveness probe over the network can tell.
    kill_case(2, 1, 1, rf"rank 0 on mnk1-h0: {IN_CALL}: lost peer: rank 1 on mnk1-h1: its process is gone")
    # Two per host: the victim's host-mate or a remote rank names it first.
    kill_case(2, 2, 3, rf"{IN_CALL}: lost peer: rank 3 on mnk2-h1")


def test_kill_rank_socket():
    # The socket transport sees the killed rank's connection close.
    kill_case(2, 1, 1, rf"rank 0 on mnk5-h0: {IN_CALL}: lost peer: rank 1 on mnk5-h1 closed its connection",
              "socket")
    kill_case(2, 2, 3, rf"{IN_CALL}: lost peer: rank 3 on mnk6-h1", "socket")


def link_down(name, net, transport):
    check_namespaces_possible()
    before = shm_segments()
    deadline_s = 8
    with Cluster(name, net, 2) as c, tempfile.TemporaryDirectory() as d:
        p, ranks = start_bench(c, d, 4, 2, deadline_s, transport)
        subprocess.run(["ip", "link", "set", f"{name}-v1", "down"], check=True)
        t0 = time.time()
        # Every rank, on both sides of the cut, must end by its deadline.
        while processes_of(ARGS.bench, ranks_only=False) and time.time() - t0 < deadline_s + 10:
            time.sleep(0.2)
        ended = time.time() - t0
        left = processes_of(ARGS.bench, ranks_only=False)
        subprocess.run(["ip", "link", "set", f"{name}-v1", "up"], check=True)
        if left:
            p.kill()
            fail(f"ranks still running {ended:.1f} s after the link went down: {left}")
        try:
            stdout, stderr = p.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            p.kill()
            fail("mpirun did not finish within 60 s of the link coming back")
        messages = rank_stderr(d)
        # The cut may fall in the barrier between two timed calls: either names the peer.
        timeouts = re.findall(rf"smddp-bench: rank (\d) on ({name}-h\d): (?:allreduce|barrier) timed out after 8 s "
                              rf"(sending to|receiving from|waiting in shared memory for) rank \d on ({name}-h\d)",
                              messages)
        if p.returncode != 3:
            fail(f"exit {p.returncode}, want 3 (timeout)\n{messages}\n{stderr[-2000:]}")
        # The first rank to time out aborts the job, so not every rank gets
        # to print; at least one must name a peer on the far side of the cut.
        across = [t for t in timeouts if t[1] != t[3]]
        if not across:
            fail(f"no rank named a peer across the cut:\n{messages}")
        print(f"all ranks ended {ended:.1f} s after the link went down (deadline {deadline_s} s), "
              f"exit {p.returncode}; {len(timeouts)} ranks reported, e.g.")
        for line in messages.splitlines():
            if "timed out" in line:
                print("  " + line.strip())
    check_nothing_left(before)


def test_link_down():
    link_down("mnl", 220, "fabric")


def test_link_down_socket():
    link_down("mnls", 227, "socket")


def json_transport(path):
    """The "transport" field of smddp-bench's -J document, wherever it sits."""
    def find(node):
        if isinstance(node, dict):
            if isinstance(node.get("transport"), str):
                return node["transport"]
            node = list(node.values())
        if isinstance(node, list):
            for v in node:
                found = find(v)
                if found:
                    return found
        return None
    return find(json.load(open(path)))


def tcp_table(pid):
    """{socket inode: (local, remote, state)} of the network namespace `pid` is in."""
    table = {}
    with open(f"/proc/{pid}/net/tcp") as f:
        next(f)
        for line in f:
            fields = line.split()
            local, remote, state, inode = fields[1], fields[2], fields[3], fields[9]
            table[inode] = (endpoint(local), endpoint(remote), state)
    return table


def endpoint(hex_text):
    """'0100A8C0:1F90' -> ('192.168.0.1', 8080)."""
    addr, port = hex_text.split(":")
    return ".".join(str(b) for b in reversed(bytes.fromhex(addr))), int(port, 16)


def socket_inodes(pid):
    inodes = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    return inodes


LISTENING = re.compile(r"rank (\d+) on \S+: socket transport, listening on ([\d.]+):(\d+), (\d+) connections at setup")


def test_socket_count():
    """8 hosts x 4 ranks, the default transport: auto takes sockets (no EFA
    here), and each rank holds at most 2*log2(8)+4 = 10 connections to other
    ranks (its partners and what its schedules use), not one per rank (31).
    Ours are told from MPI's by the listeners the ranks name
    (SMDDP_FABRIC_VERBOSE): a connection of ours has one end at a rank's
    listener. Sampled from /proc while the sweep runs; connections stay open
    until the communicator goes, so the largest sample is the count."""
    hosts, per_host, limit = 8, 4, 10
    with Cluster("mnsc", 230, hosts) as c, tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "out.json")
        cmd = c.command("--output-filename", os.path.join(d, "ranks"), "-np", str(hosts * per_host), "--npernode",
                        str(per_host), ARGS.bench, "allreduce", "-b", "8", "-e", "1M", "-f", "8", "-n", "5", "-w", "1",
                        "-T", "60", "-J", out)
        env = dict(c.env, SMDDP_FABRIC_VERBOSE="1")
        p = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        most, samples = {}, {}
        listeners = {}
        while p.poll() is None:
            for m in LISTENING.finditer(rank_stderr(d)):
                listeners[int(m.group(1))] = (m.group(2), int(m.group(3)))
            ends = set(listeners.values())
            tables = {}
            for pid, rank in processes_of(ARGS.bench).items():
                if rank not in listeners:
                    continue
                try:
                    ns = os.readlink(f"/proc/{pid}/ns/net")
                    if ns not in tables:
                        tables[ns] = tcp_table(pid)
                    ours = [i for i in socket_inodes(pid) if i in tables[ns] and tables[ns][i][2] == "01" and
                            (tables[ns][i][0] == listeners[rank] or tables[ns][i][1] in ends)]
                except OSError:  # the rank just ended
                    continue
                most[rank] = max(most.get(rank, 0), len(ours))
                samples[rank] = samples.get(rank, 0) + 1
            time.sleep(0.2)
        stdout, stderr = p.communicate()
        if p.returncode != 0:
            fail(f"exit {p.returncode}\n{(stdout + stderr + rank_stderr(d))[-4000:]}")
        if "# transport between nodes: socket" not in stdout or json_transport(out) != "socket":
            fail(f"the default transport without EFA should be socket:\n{stdout[-2000:]}")
        np = hosts * per_host
        if len(listeners) != np or len(samples) != np:
            fail(f"want every rank's listener named and sampled: listeners {sorted(listeners)}, sampled {samples}")
        over = {r: n for r, n in most.items() if n > limit}
        if over or min(most.values()) < 1:
            fail(f"connections per rank (limit {limit}, at least 1): {dict(sorted(most.items()))}")
        print(f"{np} ranks over sockets: at most {max(most.values())} connections per rank "
              f"(limit {limit}; setup: {sorted(set(int(m.group(4)) for m in LISTENING.finditer(rank_stderr(d))))}; "
              f"{min(samples.values())}+ samples per rank)")


def test_socket_fallback():
    """Host 0's ranks listen on an address host 1 cannot reach (its packets
    to it vanish, as a firewall's DROP would): under the default transport
    every rank takes MPI's point-to-point together, rank 0 says why in one
    line, and the run completes; --transport socket fails, naming the peer."""
    name, net = "mnfb", 231
    hidden = f"10.{net}.1.1"
    with Cluster(name, net, 2) as c, tempfile.TemporaryDirectory() as d:
        subprocess.run(["ip", "-n", f"{name}-h0", "addr", "add", f"{hidden}/32", "dev", "lo"], check=True)
        # Host 1 sends to a neighbour that does not exist: nothing answers.
        subprocess.run(["ip", "-n", f"{name}-h1", "neigh", "add", f"198.18.{net}.250", "lladdr", "02:00:00:00:00:01",
                        "dev", "eth0", "nud", "permanent"], check=True)
        subprocess.run(["ip", "-n", f"{name}-h1", "route", "add", f"{hidden}/32", "via", f"198.18.{net}.250"],
                       check=True)
        wrapper = f'test "$(hostname)" = {name}-h0 && export SMDDP_SOCKET_ADDRESS={hidden}; exec "$0" "$@"'
        out = os.path.join(d, "out.json")
        bench = ["/bin/sh", "-c", wrapper, ARGS.bench, "allreduce", "-b", "8", "-e", "64K", "-n", "2", "-w", "1",
                 "-T", "30"]
        r = c.run("-np", "4", "--npernode", "2", *bench, "-J", out, timeout=120,
                  extra_env={"SMDDP_SOCKET_SETUP_TIMEOUT": "2"})
        text = r.stdout + r.stderr
        if r.returncode != 0:
            fail(f"auto: exit {r.returncode}, want 0 (MPI's point-to-point)\n{text[-3000:]}")
        why = [l for l in text.splitlines() if "transport auto" in l]
        want = (f"smddp: transport auto: MPI point-to-point between nodes, not sockets: socket transport: rank 2 on "
                f"{name}-h1 cannot reach rank 0 on {name}-h0 ({hidden}:")
        if len(why) != 1 or not why[0].startswith(want) or "within 2 s" not in why[0]:
            fail(f"want one line starting {want!r}: {why}\n{text[-3000:]}")
        if "# transport between nodes: mpi" not in r.stdout or json_transport(out) != "mpi":
            fail(f"want transport mpi in the header and the JSON:\n{r.stdout[-2000:]}")
        print(why[0])
        r = c.run("-np", "4", "--npernode", "2", *bench, "--transport", "socket", timeout=120,
                  extra_env={"SMDDP_BOOTSTRAP_TIMEOUT": "2"})
        text = r.stdout + r.stderr
        want = f"socket transport: rank 2 on {name}-h1 cannot reach rank 0 on {name}-h0 ({hidden}:"
        if r.returncode == 0 or want not in text:
            fail(f"--transport socket: exit {r.returncode}, want a failure naming {want!r}\n{text[-3000:]}")
        print(next(l for l in text.splitlines() if want in l))


HANG_AT = 150  # after the start-up calls, inside the first row


def hang_remote(backend, victim, net):
    """Rank `victim` (host 1) stops before call HANG_AT; rank 0 reports the job."""
    before = shm_segments()
    timeout_s = 6
    name = {"smddp": "mnhe", "mpi": "mnhw"}[backend] + str(victim)
    with Cluster(name, net, 2) as c, tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "out.json")
        env = {"FI_PROVIDER": "tcp", "SMDDP_TEST_STALL_AT": f"{victim}:{HANG_AT}"}
        forward = ["-x", "SMDDP_TEST_STALL_AT"]
        if backend == "mpi":  # rank 0 listens only where SMDDP_STORE_BIND_ADDR says (host 0's address)
            env["SMDDP_STORE_BIND_ADDR"] = f"198.18.{net}.1"
            forward += ["-x", "SMDDP_STORE_BIND_ADDR"]
        r = c.run("--output-filename", os.path.join(d, "ranks"), *forward, "-np", "4",
                  "--npernode", "2", ARGS.bench, "allreduce", "-b", "8", "-e", "1K", "-n", "50", "-w", "5",
                  "--backend", backend, "--transport", "fabric", "-T", str(timeout_s), "-J", out,
                  timeout=200, extra_env=env)
        messages = r.stderr + rank_stderr(d)
        if r.returncode != 3:
            fail(f"exit {r.returncode}, want 3\n{messages[-4000:]}")
        host0, host1 = f"{name}-h0", f"{name}-h1"
        hang = json.load(open(out)).get("hang")
        if not hang:
            fail(f"no hang object in rank 0's -J document\n{messages[-3000:]}")
        lines = [l for l in messages.splitlines() if "hang:" in l]
        if victim == 3:
            want = (f"hang: rank 3 on host {host1} finished allreduce #{HANG_AT - 1} and has not started "
                    f"#{HANG_AT} (process stopped); the 3 others wait in allreduce #{HANG_AT}")
            if want not in messages:
                fail(f"no line '{want}' in:\n{messages[-4000:]}")
            ranks = {x["rank"]: x for x in hang["ranks"]}
            if hang["behind"] != [3] or sorted(hang["hosts"]) != [host0, host1] or hang["hosts_missing"] or \
                    sorted(ranks) != [0, 1, 2, 3] or ranks[3]["host"] != host1 or \
                    (ranks[3]["sequence"], ranks[3]["in_call"], ranks[3]["process"]) != (HANG_AT - 1, False, "stopped"):
                fail(f"hang object: {hang}")
            # Only rank 0 speaks for the job: host 1 forwarded its records.
            speakers = [path for path in glob.glob(os.path.join(d, "ranks", "*", "rank.*", "stderr"))
                        if "hang:" in open(path, errors="replace").read()]
            if [os.path.basename(os.path.dirname(path)) for path in speakers] != ["rank.0"]:
                fail(f"want only rank 0 to print the report: {speakers}")
        else:
            want = f"hang: no report from host {host1} within 2 s"
            if want not in messages or hang["hosts_missing"] != [host1] or hang["hosts"] != [host0]:
                fail(f"want '{want}' and hosts_missing [{host1}]: {hang}\n{messages[-4000:]}")
        print(lines)
    check_nothing_left(before)


def test_hang_remote_engine():
    hang_remote("smddp", 3, 241)


def test_hang_remote_watchdog():
    hang_remote("mpi", 3, 242)


def test_hang_remote_silent():
    hang_remote("smddp", 2, 243)


def test_tune_h2():
    with Cluster("mntune", 232, 2, "--rate", "1gbit") as c, tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "model.json")
        env = {"SMDDP_TRANSPORT": "fabric", "FI_PROVIDER": "tcp", "SMDDP_TIMEOUT": "30"}
        r = c.run("-np", "4", "--npernode", "2", "-x", "SMDDP_TRANSPORT", "-x", "FI_PROVIDER", "-x", "SMDDP_TIMEOUT",
                  ARGS.model, "tune", "-o", out, "--seconds", "15", timeout=120, extra_env=env)
        if r.returncode != 0:
            fail(f"tune exit {r.returncode}\n{r.stdout}\n{r.stderr[-4000:]}")
        with open(out) as f:
            m = json.load(f)
        net, probe = m["tiers"]["network"], m["fit"]["probe"]
        if "beta_us_per_byte" in net["undetermined"] or net["beta_us_per_byte"] <= 0:
            fail(f"the network tier's bandwidth is not determined: {net}")
        if (probe["hosts"], probe["ranks_per_host"], probe["transport"]) != (2, 2, "fabric"):
            fail(f"probe ran on {probe}")
        # Order, not timing: the budget asked for is recorded, the probe ended before the write.
        if probe["budget_seconds"] != 15 or not 0 < probe["probe_seconds"] <= probe["seconds"]:
            fail(f"probe record out of order: {probe}")
        print(r.stdout.strip())


def test_link_probe():
    with Cluster("mnlp", 233, 2, "--rate", "1gbit") as c:
        def explain(probe):
            r = c.run("-np", "4", "--npernode", "2", "-x", "SMDDP_LINK_PROBE", ARGS.bench, "--list-algorithms",
                      "--explain", extra_env={"SMDDP_LINK_PROBE": probe}, timeout=120)
            if r.returncode != 0:
                fail(f"--explain exit {r.returncode}\n{r.stdout}\n{r.stderr[-3000:]}")
            head = [l for l in r.stdout.splitlines() if l.startswith("# model parameters")]
            table = [l for l in r.stdout.splitlines() if not l.startswith("#")]
            return (head[0] if head else ""), table
        head, probed = explain("1")
        # Load can only make the link look slower; the rate limiter's bucket
        # (500 KB of the 4 MiB) a little faster: at most about 0.14 GB/s.
        m = re.search(r"link figures from the setup probe \(rank 0 on mnlp-h0 to rank 2 on mnlp-h1, 4 MiB\) "
                      r"\(([0-9.e+-]+) GB/s", head)
        if not m or not 0 < float(m.group(1)) < 0.24:
            fail(f"the header does not name a slow link from the probe: {head!r}")
        head_off, builtin = explain("0")
        if "setup probe" in head_off or "built-in figures for socket" not in head_off:
            fail(f"SMDDP_LINK_PROBE=0: {head_off!r}")
        if probed == builtin:
            fail("the probe's figures changed no choice:\n" + "\n".join(probed))
        print(head)


def main():
    global ARGS
    parser = argparse.ArgumentParser()
    parser.add_argument("--cluster", required=True)
    parser.add_argument("--bench", required=True)
    parser.add_argument("--collectives", required=True)
    parser.add_argument("--model", help="smddp-model (tune_h2)")
    parser.add_argument("--decline-multinode", required=True, help="what the collectives test must decline across hosts")
    parser.add_argument("--decline-odd", required=True, help="... and also at a rank count that is no power of two")
    parser.add_argument("test")
    ARGS = parser.parse_args()
    check_namespaces_possible()
    globals()["test_" + ARGS.test]()
    print("PASS", ARGS.test)


if __name__ == "__main__":
    main()
