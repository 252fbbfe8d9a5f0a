#!/usr/bin/env python3
"""The torchrun-style bootstrap end to end: ranks started without mpirun.

Usage: tcp_store_e2e.py --bench PATH --collectives-test PATH [--netns-cluster PATH] TEST

Each rank is a plain process with RANK, WORLD_SIZE, LOCAL_RANK,
LOCAL_WORLD_SIZE, MASTER_ADDR and MASTER_PORT, as torchrun sets them. Every
subprocess has a time limit (a guard against hangs, never a measurement);
every test asserts on exit codes, messages and values. Checked runs take a
random seed, printed first; SMDDP_TEST_SEED=N replays one. Exit 77 means
skipped (CTest SKIP_RETURN_CODE): only without root, where namespaces
cannot be made.
"""
import argparse
import hashlib
import hmac
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import json
import struct

ARGS = None
SKIP = 77
COLLECTIVES = {"allreduce", "allgather", "reducescatter", "broadcast", "reduce", "alltoall", "barrier",
               "gather", "scatter", "sendrecv", "alltoallv"}
SEED = int(os.environ.get("SMDDP_TEST_SEED") or int.from_bytes(os.urandom(4), "little"))
# Every job here proves a secret to the store, but those that test without one.
SECRET = os.urandom(24).hex()


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


def free_port():
    """A local TCP port nobody listens on (closed again before we return)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def rank_env(rank, world, port, addr="127.0.0.1", local=None, extra=None):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("OMPI_", "PMIX_", "PMI_", "SMDDP_")) and k not in ("RANK", "WORLD_SIZE")}
    local_rank, local_size = local if local else (rank, world)
    env.update(RANK=str(rank), WORLD_SIZE=str(world), LOCAL_RANK=str(local_rank),
               LOCAL_WORLD_SIZE=str(local_size), MASTER_ADDR=addr, MASTER_PORT=str(port), SMDDP_TIMEOUT="60",
               SMDDP_STORE_SECRET=SECRET)
    env.update(extra or {})
    return {k: v for k, v in env.items() if v is not None}  # None in `extra` unsets


def launch(cmds_envs, timeout):
    """Starts every (argv, env) at once; returns [(rc, stdout, stderr)] and the seconds taken."""
    start = time.monotonic()
    procs = [subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for argv, env in cmds_envs]
    results = []
    try:
        for p in procs:
            left = max(1.0, timeout - (time.monotonic() - start))
            out, err = p.communicate(timeout=left)
            results.append((p.returncode, out, err))
    except subprocess.TimeoutExpired:
        for p in procs:
            p.kill()
        fail(f"ranks still running after {timeout} s")
    return results, time.monotonic() - start


def ranks(argv, world, started=None, extra=None, timeout=240, port=None):
    port = port or free_port()
    started = range(world) if started is None else started
    return launch([(argv, rank_env(r, world, port, extra=extra)) for r in started], timeout)


def show(results):
    return "\n".join(f"--- rank {i} exit {rc}\n{out[-2000:]}\n{err[-2000:]}" for i, (rc, out, err) in enumerate(results))


def table_rows(stdout):
    return [l.split() for l in stdout.splitlines() if l.strip() and not l.startswith("#")]


def row_bytes(collective, size, nranks, elem=4):
    """The bytes of a row for a requested size: whole elements, and for the
    collectives that give each rank a block, whole blocks (as nccl-tests)."""
    split = ("allgather", "alltoall", "reducescatter", "gather", "scatter", "alltoallv")
    unit = elem * nranks if collective in split else elem
    return size // unit * unit


def check_collectives(extra, declines):
    counts = "0,1,7,100003"
    results, took = ranks([ARGS.collectives_test, "--counts", counts, "--seed", str(SEED),
                           "--expect-declined", declines], 4, extra=extra)
    if any(rc != 0 for rc, _, _ in results):
        fail(f"collectives test failed:\n{show(results)}")
    summary = [l for l in results[0][1].splitlines() if l.startswith("4 ranks")]
    if not summary or " 0 failed" not in summary[0]:
        fail(f"no clean summary line from rank 0:\n{results[0][1][-3000:]}")
    return summary[0], took


def test_collectives_np4():
    """4 ranks on one host (shared memory) pass the whole correctness suite."""
    line, took = check_collectives({}, ARGS.decline_one_node)
    if "(1 nodes)" not in line:
        fail(f"expected one node: {line}")
    print(f"{line} in {took:.1f} s")


def test_collectives_np4_vnodes2():
    """4 ranks as 2 virtual nodes: the socket transport carries every inter-node message."""
    line, took = check_collectives({"SMDDP_RANKS_PER_NODE": "2"}, ARGS.decline_multinode)
    if "(2 nodes)" not in line:
        fail(f"expected two nodes: {line}")
    print(f"{line} in {took:.1f} s")


def test_bench_all():
    """smddp-bench all -c 1 under the TCP store, 4 ranks in 2 virtual nodes: exit 0, #wrong 0."""
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "out.json")
        argv = [ARGS.bench, "all", "-b", "8", "-e", "1M", "-f", "8", "-c", "1", "-n", "2", "-w", "1", "-J", out,
                "--seed", str(SEED)]
        results, took = ranks(argv, 4, extra={"SMDDP_RANKS_PER_NODE": "2"})
        if any(rc != 0 for rc, _, _ in results):
            fail(f"smddp-bench failed:\n{show(results)}")
        rows = table_rows(results[0][1])
        bad = [r for r in rows if r[8] != "0" or r[12] != "0"]
        if bad:
            fail(f"rows with wrong values: {bad[:3]}")
        with open(out) as f:
            doc = json.load(f)
        if doc["nranks"] != 4 or not doc["complete"] or any(x["wrong"] for x in doc["rows"]):
            fail(f"JSON: nranks {doc['nranks']}, complete {doc['complete']}")
        # 8 B to 1 MiB in factors of 8: 6 sizes of every collective but barrier, in both placements.
        got = {(x["collective"], x["bytes"], x["placement"]) for x in doc["rows"]}
        want = {(c, row_bytes(c, 8 << (3 * k), 4), p) for c in COLLECTIVES - {"barrier"} for k in range(6)
                for p in ("out-of-place", "in-place")}
        if not want <= got or {x["collective"] for x in doc["rows"]} != COLLECTIVES:
            fail(f"JSON rows lack {sorted(want - got)[:8]}; collectives {sorted({c for c, _, _ in got})}")
        if any(rc == 0 and out.strip() for rc, out, _ in results[1:]):
            fail("ranks other than 0 printed a table")
    print(f"{len(rows)} rows, #wrong 0, in {took:.1f} s")


def test_backend_mpi_refused():
    """--backend mpi needs mpirun: under the TCP store it is a usage error (64), printed once."""
    results, _ = ranks([ARGS.bench, "allreduce", "--backend", "smddp,mpi"], 2)
    if any(rc != 64 for rc, _, _ in results):
        fail(f"expected exit 64 everywhere:\n{show(results)}")
    said = [err for _, _, err in results if "--backend mpi needs mpirun" in err]
    if len(said) != 1 or "--backend mpi needs mpirun" not in results[0][2]:
        fail(f"expected the message once, from rank 0:\n{show(results)}")
    print(results[0][2].strip())


def expect_all_fail(results, code, *needles):
    for i, (rc, out, err) in enumerate(results):
        if rc != code:
            fail(f"rank {i}: exit {rc}, expected {code}\n{show(results)}")
        lines = [l for l in err.splitlines() if l.strip()]
        if len(lines) != 1:
            fail(f"rank {i}: expected one line on stderr, got:\n{err}")
        for n in needles:
            if n not in err:
                fail(f"rank {i}: message lacks {n!r}: {err}")


def test_world_size_too_big():
    """WORLD_SIZE=5 but 4 ranks start: each fails within the bootstrap timeout naming the missing rank."""
    results, took = ranks([ARGS.bench, "allreduce"], 5, started=range(4), extra={"SMDDP_BOOTSTRAP_TIMEOUT": "3"})
    expect_all_fail(results, 3, "only 4 of WORLD_SIZE=5 ranks joined", "missing rank 4", "within 3 s")
    print(f"{took:.1f} s: {results[1][2].strip()}")


def test_world_size_disagree():
    """One rank says WORLD_SIZE=5, the others 4: all fail at once with a usage error naming both."""
    port = free_port()
    cmds = [([ARGS.bench, "allreduce"], rank_env(r, 5 if r == 2 else 4, port)) for r in range(4)]
    results, took = launch(cmds, 60)
    expect_all_fail(results, 64, "ranks disagree on WORLD_SIZE", "rank 0", "has 4", "rank 2", "has 5")
    print(f"{took:.1f} s: {results[0][2].strip()}")


def test_unreachable():
    """No rank 0 listens on MASTER_PORT (a closed local port): ranks 1..3 fail within the timeout."""
    results, took = ranks([ARGS.bench, "allreduce"], 4, started=range(1, 4),
                          extra={"SMDDP_BOOTSTRAP_TIMEOUT": "3"})
    expect_all_fail(results, 3, "cannot reach rank 0", "127.0.0.1", "within 3 s", "Connection refused")
    print(f"{took:.1f} s: {results[0][2].strip()}")


def test_malformed():
    """Malformed or partial variables: one clear line, exit 64, before connecting."""
    cases = [
        ({"RANK": "one"}, "RANK='one'"),
        ({"RANK": "4"}, "RANK=4 is not below WORLD_SIZE=4"),
        ({"MASTER_PORT": "70000"}, "MASTER_PORT='70000'"),
        ({"LOCAL_RANK": "4", "LOCAL_WORLD_SIZE": "2"}, "LOCAL_RANK='4'"),
        ({"MASTER_ADDR": ""}, "MASTER_ADDR is not set"),
    ]
    for extra, needle in cases:
        env = rank_env(1, 4, free_port())
        env.update(extra)
        r = subprocess.run([ARGS.bench, "allreduce"], env=env, capture_output=True, text=True, timeout=30)
        if r.returncode != 64 or needle not in r.stderr or len(r.stderr.strip().splitlines()) != 1:
            fail(f"{extra}: exit {r.returncode}, stderr {r.stderr!r}; expected 64 and {needle!r}")
    # SMDDP_* settings are checked before connecting: rank 0 says it, the others exit 64 silently.
    for rank, want in ((0, "SMDDP_BOOTSTRAP_TIMEOUT='soon'"), (1, "")):
        env = rank_env(rank, 4, free_port(), extra={"SMDDP_BOOTSTRAP_TIMEOUT": "soon"})
        r = subprocess.run([ARGS.bench, "allreduce"], env=env, capture_output=True, text=True, timeout=30)
        if r.returncode != 64 or (want not in r.stderr if want else r.stderr.strip()) or \
                len(r.stderr.strip().splitlines()) != (1 if want else 0):
            fail(f"rank {rank} SMDDP_BOOTSTRAP_TIMEOUT=soon: exit {r.returncode}, stderr {r.stderr!r}")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OMPI_", "PMIX_", "PMI_"))}
    env.update(WORLD_SIZE="4", RANK="0")
    env.pop("MASTER_ADDR", None)
    env.pop("MASTER_PORT", None)
    r = subprocess.run([ARGS.bench, "allreduce"], env=env, capture_output=True, text=True, timeout=30)
    if r.returncode != 64 or "MASTER_ADDR, MASTER_PORT are not set" not in r.stderr:
        fail(f"partial torchrun variables: exit {r.returncode}, {r.stderr!r}")
    print(f"{len(cases) + 3} malformed environments refused with 64")


def test_peer_lost():
    """SIGKILL of rank 3 mid-sweep (2 virtual nodes): survivors end non-zero in bounded time, naming a lost peer."""
    port = free_port()
    argv = [ARGS.bench, "allreduce", "-b", "1M", "-e", "16M", "-f", "2", "-n", "1000", "-w", "1", "-T", "15"]
    procs = [subprocess.Popen(argv, env=rank_env(r, 4, port, extra={"SMDDP_RANKS_PER_NODE": "2"}),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for r in range(4)]
    # Kill once the sweep runs: rank 0 has printed the table's header.
    header = threading.Event()
    lines = []

    def read_rank0():
        for line in procs[0].stdout:
            lines.append(line)
            if "out-of-place" in line:
                header.set()

    reader = threading.Thread(target=read_rank0, daemon=True)
    reader.start()
    if not header.wait(90) or any(p.poll() is not None for p in procs):
        for p in procs:
            p.kill()
        fail("the sweep did not start, or a rank ended before the kill: " + str([p.poll() for p in procs]))
    time.sleep(1)
    procs[3].send_signal(signal.SIGKILL)
    procs[3].wait()  # reaped at once, as a launcher would: no zombie passes for alive
    start = time.monotonic()
    results = []
    for p in procs[:3]:
        try:
            if p is procs[0]:  # its stdout belongs to the reader thread
                p.wait(timeout=45)
                reader.join(5)
                out, err = "".join(lines), p.stderr.read()
            else:
                out, err = p.communicate(timeout=45)
        except subprocess.TimeoutExpired:
            for q in procs:
                q.kill()
            fail("survivors still running 45 s after the kill")
        results.append((p.returncode, out, err))
    took = time.monotonic() - start
    if any(rc == 0 for rc, _, _ in results):
        fail(f"a survivor exited 0:\n{show(results)}")
    errs = "".join(err for _, _, err in results)
    # Rank 2 shares rank 3's node (its pid is gone); ranks 0 and 1 reach the
    # other node through the socket transport (a closed connection).
    if "lost peer: rank 3" not in errs or "closed its connection" not in errs:
        fail(f"no survivor named the lost peer:\n{show(results)}")
    print(f"survivors ended in {took:.1f} s: " + "; ".join(err.strip().splitlines()[0] for _, _, err in results if err.strip()))


# The store's wire format (collectives/transport/src/bootstrap/tcp_store_wire.h), as a stranger speaks it.
MAGIC = 0x564b4d53
HELLO, CHALLENGE, DENIED = 1, 4, 5


def frame(code, payload):
    return struct.pack("<IBI", MAGIC, code, len(payload)) + payload


def wire_str(b):
    return struct.pack("<I", len(b)) + b


def read_frame(sock):
    """(code, payload), or None once the store has closed the connection."""
    data = b""
    try:
        while len(data) < 9 or len(data) < 9 + struct.unpack("<I", data[5:9])[0]:
            chunk = sock.recv(65536)
            if not chunk:
                return None
            data += chunk
    except ConnectionResetError:
        return None
    return data[4], data[9:]


def closed_by_store(sock, limit):
    """True when the store closes the connection within `limit` seconds."""
    sock.settimeout(limit)
    try:
        while True:
            chunk = sock.recv(4096)
            if not chunk:
                return True
    except ConnectionResetError:
        return True
    except socket.timeout:
        return False


def stranger(port, kind, results):
    """One hostile client; results[kind] = whether the store dropped it."""
    try:
        attack(port, kind, results)
    except (BrokenPipeError, ConnectionResetError):  # the store closed it while we sent
        results.setdefault(kind, kind != "wrong_secret")


def attack(port, kind, results):
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        code, payload = read_frame(s)
        if code != CHALLENGE:
            results[kind] = f"first frame {code}, not a challenge"
            return
        version, nonce = payload[0:4], payload[12:44]  # the challenge: version, flags, nonce
        if kind == "garbage":
            s.sendall(os.urandom(64))
        elif kind == "oversized":
            s.sendall(struct.pack("<IBI", MAGIC, HELLO, 256 << 20) + b"\0" * 65536)
        elif kind == "wrong_secret":
            mine = os.urandom(32)
            payload = (struct.pack("<II", 1, 4) + wire_str(b"intruder") + wire_str(mine))
            context = (wire_str(b"smddp-store client") + version + wire_str(nonce) + wire_str(mine)
                       + struct.pack("<II", 1, 4) + wire_str(b"intruder"))
            proof = hmac.new(b"not the job's secret at all", frame(0, context), hashlib.sha256).digest()
            s.sendall(frame(HELLO, payload + wire_str(proof)))
            reply = read_frame(s)
            if not reply or reply[0] != DENIED:
                results[kind] = f"wrong secret answered with {reply}"
                return
        elif kind == "trickle":
            # A valid head, one byte a second: never a whole message.
            for b in struct.pack("<IBI", MAGIC, HELLO, 100):
                try:
                    s.sendall(bytes([b]))
                except (BrokenPipeError, ConnectionResetError):
                    results[kind] = True
                    return
                if closed_by_store(s, 1.0):
                    results[kind] = True
                    return
            results[kind] = "still connected after 9 s of one byte a second"
            return
        results[kind] = closed_by_store(s, 20)


def wait_listening(port, proc, limit=30):
    start = time.monotonic()
    while time.monotonic() - start < limit:
        if proc.poll() is not None:
            fail(f"rank 0 ended before its store listened: exit {proc.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return
        except OSError:
            time.sleep(0.1)
    fail(f"rank 0's store did not listen within {limit} s")


def test_hostile_clients():
    """While 4 ranks meet and run, the store gets garbage, a client sending a byte a second, a wrong
    secret and an oversized message: each is dropped with one line from rank 0; the job is correct."""
    port = free_port()
    argv = [ARGS.bench, "allreduce", "-b", "8", "-e", "64K", "-f", "8", "-c", "1", "-n", "2", "-w", "1",
            "--seed", str(SEED)]
    extra = {"SMDDP_STORE_HANDSHAKE_TIMEOUT": "4"}
    procs = [subprocess.Popen(argv, env=rank_env(0, 4, port, extra=extra), stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)]
    try:
        wait_listening(port, procs[0])
        results = {}
        kinds = ("garbage", "trickle", "wrong_secret", "oversized")
        threads = [threading.Thread(target=stranger, args=(port, k, results), daemon=True) for k in kinds]
        for t in threads:
            t.start()
        # Two ranks join while the strangers are at it; the last once they are gone.
        for r in (1, 2):
            procs.append(subprocess.Popen(argv, env=rank_env(r, 4, port, extra=extra), stdout=subprocess.PIPE,
                                          stderr=subprocess.PIPE, text=True))
        for t in threads:
            t.join(40)
        procs.append(subprocess.Popen(argv, env=rank_env(3, 4, port, extra=extra), stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE, text=True))
        outs = [p.communicate(timeout=120) for p in procs]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
    done = [(p.returncode, out, err) for p, (out, err) in zip(procs, outs)]
    if any(results.get(k) is not True for k in kinds):
        fail(f"strangers not dropped: {results}\n{show(done)}")
    if any(rc != 0 for rc, _, _ in done):
        fail(f"the job failed:\n{show(done)}")
    rows = table_rows(done[0][1])
    if not rows or any(r[8] != "0" or r[12] != "0" for r in rows):
        fail(f"wrong values or no rows:\n{done[0][1]}")
    lines = [l for l in done[0][2].splitlines() if l.strip()]
    drops = [l for l in lines if "TCP store on rank 0: dropped the connection from 127.0.0.1:" in l]
    reasons = ("not the smddp TCP store protocol", "no handshake within 4 s", "wrong proof of SMDDP_STORE_SECRET",
               "over the limit of 4096 before the handshake")
    if len(drops) != 4 or len(lines) != 4 or any(not any(r in l for l in drops) for r in reasons):
        fail(f"rank 0 should say one line per dropped stranger, and nothing else:\n{done[0][2]}")
    if any(err.strip() for _, _, err in done[1:]):
        fail(f"ranks 1-3 printed on stderr:\n{show(done)}")
    print(f"{len(rows)} rows, #wrong 0; rank 0 said:\n" + "\n".join(drops))


def test_wrong_secret():
    """Rank 1 has another secret: it exits 64 naming SMDDP_STORE_SECRET; rank 0 times out naming the refusal."""
    port = free_port()
    cmds = [([ARGS.bench, "allreduce"],
             rank_env(r, 2, port, extra={"SMDDP_BOOTSTRAP_TIMEOUT": "3",
                                         "SMDDP_STORE_SECRET": SECRET if r == 0 else "x" * 32})) for r in range(2)]
    results, took = launch(cmds, 60)
    expect_all_fail(results[1:], 64, "refused the handshake of rank 1", "SMDDP_STORE_SECRET differs")
    # Rank 0: the refusal as it happened, then the bootstrap's end naming it.
    rc, _, err = results[0]
    lines = [l for l in err.splitlines() if l.strip()]
    if rc != 3 or len(lines) != 2 or "wrong proof of SMDDP_STORE_SECRET" not in lines[0] \
            or "missing rank 1; 1 connection was refused for a wrong SMDDP_STORE_SECRET" not in lines[1]:
        fail(f"rank 0: expected exit 3, the refusal and the timeout naming it:\n{show(results)}")
    print(f"{took:.1f} s: {results[1][2].strip()} / {results[0][2].strip()}")


def test_no_secret():
    """Without a secret the store works as torchrun's: rank 0 warns once, in one line (and the
    socket transport between the 2 virtual nodes says its plain hello)."""
    results, _ = ranks([ARGS.bench, "allreduce", "-b", "8", "-e", "8", "-n", "1", "-w", "0"], 2,
                       extra={"SMDDP_STORE_SECRET": None, "SMDDP_RANKS_PER_NODE": "1"})
    if any(rc != 0 for rc, _, _ in results):
        fail(f"run without a secret failed:\n{show(results)}")
    lines = [l for l in results[0][2].splitlines() if l.strip()]
    if len(lines) != 1 or "unauthenticated" not in lines[0] or results[1][2].strip():
        fail(f"expected one warning line from rank 0 only:\n{show(results)}")
    # One side with a secret and the other without is refused, by name.
    port = free_port()
    cmds = [([ARGS.bench, "allreduce"], rank_env(r, 2, port, extra={"SMDDP_STORE_SECRET": None if r == 0 else SECRET,
                                                                    "SMDDP_BOOTSTRAP_TIMEOUT": "3"}))
            for r in range(2)]
    mixed, _ = launch(cmds, 60)
    if mixed[1][0] != 64 or "runs without one" not in mixed[1][2]:
        fail(f"rank 1 with a secret against a store without one:\n{show(mixed)}")
    print(lines[0])


def test_secret_file():
    """SMDDP_STORE_SECRET_FILE: a 0600 file works; a 0644 one is refused, one line from rank 0, exit 64."""
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "secret")
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        os.write(fd, (SECRET + "\n").encode())
        os.close(fd)
        file_env = {"SMDDP_STORE_SECRET": None, "SMDDP_STORE_SECRET_FILE": path}
        results, _ = ranks([ARGS.bench, "allreduce", "-b", "8", "-e", "8", "-n", "1", "-w", "0"], 2, extra=file_env)
        if any(rc != 0 or err.strip() for rc, _, err in results):
            fail(f"run with a 0600 secret file:\n{show(results)}")
        os.chmod(path, 0o644)
        results, _ = ranks([ARGS.bench, "allreduce"], 2, extra=file_env)
        if any(rc != 64 for rc, _, _ in results):
            fail(f"expected exit 64 everywhere with a 0644 file:\n{show(results)}")
        lines = results[0][2].strip().splitlines()
        if len(lines) != 1 or "SMDDP_STORE_SECRET_FILE" not in lines[0] or "mode 0644" not in lines[0] \
                or results[1][2].strip():
            fail(f"expected one line from rank 0 naming the mode:\n{show(results)}")
    print(lines[0])


def accepts(addr, port):
    try:
        with socket.create_connection((addr, port), timeout=2):
            return True
    except OSError:
        return False


def test_bind_addr():
    """The store listens on MASTER_ADDR's address only (SMDDP_STORE_BIND_ADDR names another);
    a MASTER_ADDR that is not rank 0's own is one line naming the setting."""
    for bind, want in ((None, (True, False)), ("0.0.0.0", (True, True))):
        port = free_port()
        p = subprocess.Popen([ARGS.bench, "allreduce"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             env=rank_env(0, 2, port, extra={"SMDDP_STORE_BIND_ADDR": bind,
                                                             "SMDDP_BOOTSTRAP_TIMEOUT": "20"}))
        try:
            wait_listening(port, p)
            got = (accepts("127.0.0.1", port), accepts("127.0.0.2", port))
        finally:
            p.terminate()  # the supervisor passes it to the rank
            try:
                p.communicate(timeout=20)
            except subprocess.TimeoutExpired:
                p.kill()
                p.communicate()
        if got != want:
            fail(f"SMDDP_STORE_BIND_ADDR={bind}: 127.0.0.1 and 127.0.0.2 accept {got}, want {want}")
    # 192.0.2.1 (TEST-NET-1) is no address of this host.
    results, _ = launch([([ARGS.bench, "allreduce"], rank_env(0, 2, free_port(), addr="192.0.2.1"))], 60)
    rc, _, err = results[0]
    if rc != 3 or len(err.strip().splitlines()) != 1 or "SMDDP_STORE_BIND_ADDR" not in err \
            or "MASTER_ADDR=192.0.2.1" not in err:
        fail(f"a MASTER_ADDR not on rank 0's host: exit {rc}, {err!r}")
    print(err.strip())


def test_two_hosts():
    """2 hosts as network namespaces (scripts/netns-cluster.sh), 2 ranks each, MASTER_ADDR on host 0."""
    if os.geteuid() != 0:
        print("SKIP: network namespaces need root")
        sys.exit(SKIP)
    if not ARGS.netns_cluster or not os.path.exists(ARGS.netns_cluster):
        fail(f"no netns-cluster script at {ARGS.netns_cluster!r}")
    env = dict(os.environ, SMDDP_NETNS_NAME="dply", SMDDP_NETNS_NET="77")
    up = subprocess.run([ARGS.netns_cluster, "up", "2"], env=env, capture_output=True, text=True, timeout=60)
    if up.returncode != 0:  # as root this is a broken script or kernel, not a reason to skip
        fail(f"netns-cluster up failed: {up.stderr.strip()}")
    try:
        master = "198.18.77.1"
        port = 29500
        cmds = []
        for r in range(4):
            host = r // 2
            ns = f"dply-h{host}"
            argv = ["ip", "netns", "exec", ns, "unshare", "--uts", "--", "sh", "-c",
                    'hostname "$0" && exec "$@"', ns, ARGS.bench, "allreduce", "alltoall", "-b", "8", "-e", "4M",
                    "-f", "16", "-c", "1", "-n", "2", "-w", "1", "--seed", str(SEED)]
            cmds.append((argv, rank_env(r, 4, port, addr=master, local=(r % 2, 2))))
        results, took = launch(cmds, 180)
        if any(rc != 0 for rc, _, _ in results):
            fail(f"two-host run failed:\n{show(results)}")
        out = results[0][1]
        rows = table_rows(out)
        if not rows or any(r[8] != "0" or r[12] != "0" for r in rows):
            fail(f"wrong values or no rows:\n{out}")
        if "dply-h0" not in out or "dply-h1" not in out:
            fail(f"the report does not show both hosts:\n{out[:3000]}")
        print(f"{len(rows)} rows across 2 namespaces, #wrong 0, in {took:.1f} s")
    finally:
        subprocess.run([ARGS.netns_cluster, "down"], env=env, capture_output=True, timeout=60)


def main():
    global ARGS
    p = argparse.ArgumentParser()
    p.add_argument("--bench", required=True)
    p.add_argument("--collectives-test", required=True)
    p.add_argument("--netns-cluster")
    p.add_argument("--decline-one-node", required=True, help="what the collectives test must decline on one node")
    p.add_argument("--decline-multinode", required=True, help="... and across virtual nodes")
    p.add_argument("test")
    ARGS = p.parse_args()
    print(f"seed {SEED} (SMDDP_TEST_SEED={SEED} replays it)")
    fn = globals().get("test_" + ARGS.test)
    if not fn:
        fail(f"unknown test {ARGS.test}")
    fn()


if __name__ == "__main__":
    main()
