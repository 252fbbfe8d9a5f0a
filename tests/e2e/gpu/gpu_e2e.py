#!/usr/bin/env python3
"""End-to-end tests of the GPU path (CUDA builds), run by CTest and, from the
device bundle, by scripts/device-check.sh.

Usage: gpu_e2e.py --bench PATH [--micro PATH] [--kernels PATH] [--diag PATH]
                  [--fake-cuda LIB] [--mpirun PATH] TEST

Ranks start through the TCP store (RANK, WORLD_SIZE, MASTER_ADDR,
MASTER_PORT; docs/deploy.md), so no mpirun is needed.

Whether a GPU is there is `nvidia-smi -L`'s answer, never the product's: the
tests that need a GPU exit 77 (CTest SKIP_RETURN_CODE) with a "SKIP: no CUDA
device" line when it lists none, and fail when it lists one that smddp-bench
cannot use. no_device is the reverse. fake_* tests run everywhere, with
fake_cuda.cc preloaded in place of the CUDA runtime and NCCL.
"""
import argparse
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

ARGS = None
SKIP = 77
ALL = ["allreduce", "allgather", "reducescatter", "broadcast", "reduce", "alltoall", "barrier", "gather", "scatter",
       "sendrecv", "alltoallv"]
# The fake runs no kernels, and avg divides on the device (cuda_staged).
FAKE_OPS = "sum,prod,min,max"


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


def skip(msg):
    print("SKIP:", msg)
    sys.exit(SKIP)


def run(cmd, timeout=300, env=None):
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def rank_env(rank, world, port, extra):
    env = dict(os.environ)
    for k in ("OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK", "SLURM_PROCID"):
        env.pop(k, None)
    env.update({"RANK": str(rank), "WORLD_SIZE": str(world), "LOCAL_RANK": str(rank),
                "LOCAL_WORLD_SIZE": str(world), "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port)})
    env.update(extra or {})
    return env


def start_ranks(np, args, env=None, binary=None):
    port = free_port()
    return [subprocess.Popen([binary or ARGS.bench, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True, env=rank_env(r, np, port, env)) for r in range(np)]


def wait_ranks(procs, timeout=300):
    out = []
    deadline = time.time() + timeout
    for p in procs:
        try:
            o, e = p.communicate(timeout=max(1, deadline - time.time()))
        except subprocess.TimeoutExpired:
            for q in procs:
                q.kill()
            fail(f"ranks did not finish within {timeout} s")
        out.append((p.returncode, o, e))
    return out


def tcp_run(np, args, env=None, timeout=300):
    """[(exit, stdout, stderr)] of np ranks through the TCP store."""
    return wait_ranks(start_ranks(np, args, env), timeout)


def sweep_json(np, args, env=None, timeout=300):
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "out.json")
        results = tcp_run(np, [*args, "--mem", "cuda", "-J", out], env, timeout)
        for rc, o, e in results:
            if rc != 0:
                fail(f"exit {rc}\n{o[-3000:]}\n{e[-3000:]}")
        with open(out) as f:
            return json.load(f)


def check_rows(doc, backend, collectives, algorithm=None):
    if not doc["complete"] or doc["devices"]["memory"] != "cuda":
        fail("JSON not complete or not --mem cuda")
    rows = doc["rows"]
    seen = {x["collective"] for x in rows}
    if seen != set(collectives):
        fail(f"collectives {sorted(seen)} != {sorted(collectives)}")
    for x in rows:
        if x["backend"] != backend:
            fail(f"unexpected backend in {x}")
        if x["collective"] != "barrier" and x["wrong"] != 0:
            fail(f"{x['wrong']} wrong values: {x}")
        if x["collective"] != "barrier" and algorithm and x["algorithm"] != algorithm:
            fail(f"algorithm {x['algorithm']} != {algorithm}: {x}")
        if x["time_us"] <= 0:
            fail(f"no time measured: {x}")
    if {x["placement"] for x in rows} != {"in-place", "out-of-place"}:
        fail("expected both placements")
    return len(rows)


# ---- is there a GPU: nvidia-smi's answer, checked against the product's

def listed_gpus():
    smi = shutil.which("nvidia-smi")
    if not smi:
        return 0
    try:
        r = run([smi, "-L"], timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return 0
    return len([line for line in r.stdout.splitlines() if line.startswith("GPU ")])


def need_gpu():
    n = listed_gpus()
    if n == 0:
        skip("no CUDA device (nvidia-smi -L lists no GPU)")
    # The product must agree: a listed GPU it cannot use is a failure.
    rc, o, e = tcp_run(1, ["allreduce", "-b", "8", "-e", "8", "-n", "1", "-w", "0", "--mem", "cuda"], timeout=120)[0]
    if rc != 0:
        fail(f"nvidia-smi -L lists {n} GPU(s) but smddp-bench --mem cuda exits {rc}: {e.strip()[-800:]}")
    return n


def sweep_collectives(backend, np, env=None, extra=(), algorithm=None):
    doc = sweep_json(np, ["all", "-b", "8", "-e", "8M", "-f", "8", "-c", "1", "-n", "2", "-w", "1",
                          "--backend", backend, "-r", str(np - 1), *extra], env)
    n = check_rows(doc, backend, ALL, algorithm)
    doc = sweep_json(np, ["allreduce", "reducescatter", "reduce", "allgather", "-b", "64", "-e", "64K", "-f", "32",
                          "-d", "all", "-o", "all", "-c", "1", "-n", "1", "-w", "0", "--backend", backend], env)
    n += check_rows(doc, backend, ["allreduce", "reducescatter", "reduce", "allgather"])
    print(f"{backend}: {n} rows on {np} ranks, all #wrong 0")


# ---- tests that need a GPU

def test_micro_smoke():
    """smddp-micro-cuda: a copy-kernel baseline, every dtype's reduce_into, rates > 0, fractions of the copy."""
    need_gpu()
    r = run([ARGS.micro, "--quick"], timeout=200)
    if r.returncode != 0:
        fail(f"exit {r.returncode}: {r.stdout[-2000:]} {r.stderr[-2000:]}")
    rows = {}
    for line in r.stdout.splitlines():
        if line.startswith("#") or not line.strip():
            continue
        m = re.match(r"^(.*?)\s+([0-9.]+)\s+(\S+)$", line)
        if not m:
            fail(f"unparsable row {line!r}")
        rows[m.group(1)] = (float(m.group(2)), m.group(3))
    copy = rows.get("d2d copy (copy kernel)")
    if not copy or copy[1] != "1.00":
        fail(f"no copy-kernel baseline row with fraction 1.00: {sorted(rows)}")
    want = [f"reduce_into sum {t}" for t in
            ("int8", "uint8", "int32", "uint32", "int64", "uint64", "half", "bfloat16", "float", "double",
             "f8e4m3", "f8e5m2")]
    missing = [w for w in want if w not in rows]
    if missing:
        fail(f"rows missing: {missing}")
    for name, (gbps, frac) in rows.items():
        if gbps <= 0:
            fail(f"{name}: {gbps} GB/s")
        if frac != "-" and not 0 < float(frac) < 100:
            fail(f"{name}: fraction of copy {frac}")
    print(f"{len(rows)} rows, copy kernel {copy[0]:.1f} GB/s")


def test_no_device():
    """Without a GPU, --mem cuda and --backend nccl are refused (exit 64, one line)."""
    if listed_gpus():
        skip("nvidia-smi lists a GPU; this test is for hosts without one")
    cases = [
        (["--mem", "cuda"], "--mem cuda: no CUDA device on host"),
        (["--mem", "cuda", "--backend", "nccl"], "--mem cuda: no CUDA device on host"),
        (["--backend", "nccl"], "--backend nccl takes device buffers: add --mem cuda"),
        (["--mem", "cuda", "--backend", "mpi"], "the mpi backend takes host buffers only"),
    ]
    for args, want in cases:
        r = run([ARGS.bench, *args], timeout=60)
        lines = r.stderr.strip().splitlines()
        if r.returncode != 64 or len(lines) != 1 or want not in lines[0]:
            fail(f"{args}: exit {r.returncode}, stderr {r.stderr!r}; want 64 and one line with {want!r}")
    r = run([ARGS.bench, "--list-algorithms"], timeout=60)
    staged = [line.split() for line in r.stdout.splitlines() if " cuda_staged " in line]
    if r.returncode != 0 or sorted(s[0] for s in staged) != sorted(c for c in ALL if c != "barrier"):
        fail(f"--list-algorithms should list cuda_staged for every collective but barrier:\n{r.stdout}")
    if any(s[2] != "cuda" for s in staged):
        fail(f"cuda_staged rows must say memory 'cuda': {staged}")
    print("refusals and algorithm list as expected")


def test_smddp_collectives():
    """The engine with device buffers: every collective, dtype and op exact on 2 ranks sharing a GPU."""
    need_gpu()
    sweep_collectives("smddp", 2, algorithm="cuda_staged")


def test_smddp_many_chunks():
    """cuda_staged with 1 KiB staging chunks: hundreds of chunks per call, both slots and streams reused."""
    need_gpu()
    doc = sweep_json(2, ["all", "-b", "8", "-e", "1M", "-f", "16", "-c", "1", "-n", "1", "-w", "0",
                         "--backend", "smddp"], {"SMDDP_CUDA_CHUNK_BYTES": "1024"})
    n = check_rows(doc, "smddp", ALL, "cuda_staged")
    print(f"{n} rows with 1 KiB chunks, all #wrong 0")


def test_nccl_collectives():
    """NCCL on one rank: every collective, dtype and op exact, out of place into a separate poisoned buffer."""
    need_gpu()
    sweep_collectives("nccl", 1, algorithm="nccl")


def test_nccl_collectives_multi():
    """NCCL on 2 ranks, one GPU each (NCCL refuses two ranks on one GPU)."""
    if need_gpu() < 2:
        skip("needs 2 GPUs (NCCL takes one GPU per rank)")
    sweep_collectives("nccl", 2, algorithm="nccl")


def children(pid):
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            return [int(x) for x in f.read().split()]
    except OSError:
        return []


def test_nccl_kill_rank():
    """SIGKILL of one NCCL rank after a row completed: the job ends with 3 and the killed rank is named."""
    if need_gpu() < 2:
        skip("needs 2 GPUs (NCCL takes one GPU per rank)")
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "out.json")
        procs = start_ranks(2, ["allreduce", "-b", "64M", "-e", "256M", "-f", "2", "-n", "500", "-w", "1",
                                "-T", "20", "--mem", "cuda", "--backend", "nccl", "-J", out])
        deadline = time.time() + 120
        rows = []
        while time.time() < deadline and not rows:
            time.sleep(0.2)
            try:
                rows = json.load(open(out))["rows"]
            except (OSError, ValueError, KeyError):
                rows = []
        rank1 = children(procs[1].pid)
        if not rows or not rank1:
            for p in procs:
                p.kill()
            fail(f"no completed row ({len(rows)}) or no rank-1 process ({rank1}) before the kill")
        os.kill(rank1[0], signal.SIGKILL)
        results = wait_ranks(procs, timeout=90)
        if any(rc != 3 for rc, _, _ in results):
            fail(f"exits {[rc for rc, _, _ in results]} after rank 1 was killed, want 3 on both")
        named = f"rank 1 on {socket.gethostname()} (pid {rank1[0]}) was killed by signal 9"
        if named not in results[1][2]:
            fail(f"rank 1's supervisor did not name it ({named!r}):\n{results[1][2][-2000:]}")
        if not re.search(r"timed out|lost peer|NCCL error|rank 1", results[0][2]):
            fail(f"rank 0 did not report the lost peer:\n{results[0][2][-2000:]}")
        print(f"{len(rows)} row(s) done; rank 1 killed and named; both exit 3")


def test_fork_maps():
    """libcuda is mapped in the rank process, never in its supervising parent (CUDA does not survive fork)."""
    need_gpu()
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "out.json")
        procs = start_ranks(1, ["allreduce", "-b", "1M", "-e", "1G", "-f", "2", "-n", "200", "-w", "1",
                                "--mem", "cuda", "-J", out])
        parent = procs[0].pid
        deadline = time.time() + 120
        seen = None
        while time.time() < deadline and seen is None:
            time.sleep(0.2)
            kids = children(parent)
            try:
                rows = json.load(open(out))["rows"]
            except (OSError, ValueError, KeyError):
                rows = []
            if kids and rows:
                try:
                    seen = (open(f"/proc/{parent}/maps").read(), open(f"/proc/{kids[0]}/maps").read())
                except OSError:
                    seen = None
        procs[0].kill()
        for k in children(parent):
            os.kill(k, signal.SIGKILL)
        procs[0].communicate()
        if seen is None:
            fail("could not read both processes' maps while the sweep ran")
        if "libcuda.so" in seen[0]:
            fail("libcuda is mapped in the supervising parent")
        if "libcuda.so" not in seen[1]:
            fail("libcuda is not mapped in the rank process (is this a GPU run?)")
        print("libcuda in the rank process only")


# ---- tests with the stand-in runtime (fake_cuda.cc): every host

def fake_env(tmp, extra=None, smi_lists=False):
    """LD_PRELOAD the fake, no NVML, and a stand-in nvidia-smi on PATH."""
    bindir = os.path.join(tmp, "bin")
    os.makedirs(bindir, exist_ok=True)
    smi = os.path.join(bindir, "nvidia-smi")
    with open(smi, "w") as f:
        if smi_lists:
            f.write("#!/bin/sh\necho 'GPU 0: NVIDIA H200 (UUID: GPU-00000000-fake)'\n")
        else:
            f.write("#!/bin/sh\necho 'No devices were found'\nexit 6\n")
    os.chmod(smi, 0o755)
    env = {"LD_PRELOAD": ARGS.fake_cuda, "FAKE_CUDA_LOG": os.path.join(tmp, "cuda.log"),
           "SMDDP_NVML_LIBRARY": "libnvidia-ml-absent.so.1", "PATH": bindir + os.pathsep + os.environ["PATH"]}
    env.update(extra or {})
    return env


def fake_log(tmp):
    """[(pid, ppid, call...)] lines the fake wrote."""
    path = os.path.join(tmp, "cuda.log")
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return [(int(a), int(b), rest) for a, b, rest in (line.rstrip("\n").split(" ", 2) for line in f)]


def test_fake_fork_probe():
    """No CUDA call and no driver dlopen in the supervising parent: the device probe runs in the rank process."""
    with tempfile.TemporaryDirectory() as tmp:
        env = fake_env(tmp)
        procs = start_ranks(1, ["allreduce", "-b", "8", "-e", "1K", "-n", "1", "-w", "0", "--mem", "cuda"], env)
        parent = procs[0].pid
        rc, o, e = wait_ranks(procs, 120)[0]
        if rc != 0:
            fail(f"exit {rc}: {e[-2000:]}")
        log = fake_log(tmp)
        in_parent = [x for x in log if x[0] == parent]
        if in_parent:
            fail(f"CUDA called in the supervising parent {parent}: {in_parent[:5]}")
        probes = [x for x in log if x[2].startswith("cudaGetDeviceCount") and x[1] == parent]
        if not probes:
            fail(f"no device probe in a child of {parent}: {log[:10]}")
        # The control: unsupervised, the launched process is the rank and does probe.
        procs = start_ranks(1, ["allreduce", "-b", "8", "-e", "8", "-n", "1", "--mem", "cuda"],
                            dict(env, SMDDP_SUPERVISE="0"))
        pid = procs[0].pid
        wait_ranks(procs, 120)
        if not any(x[0] == pid and x[2].startswith("cudaGetDeviceCount") for x in fake_log(tmp)):
            fail("SMDDP_SUPERVISE=0: the probe was not seen in the launched process (the log is not working)")
        print(f"{len(probes)} probe(s), all in the rank process; none in the parent")


def test_fake_stream_order():
    """Fills and poisons are ordered before NCCL's non-blocking stream: every collective and op exact."""
    with tempfile.TemporaryDirectory() as tmp:
        env = fake_env(tmp)
        doc = sweep_json(1, ["all", "-b", "8", "-e", "64K", "-f", "8", "-c", "1", "-n", "2", "-w", "1",
                             "--backend", "nccl", "-o", "all"], env)
        n = check_rows(doc, "nccl", ALL, "nccl")
        doc = sweep_json(1, ["allreduce", "allgather", "-b", "64", "-e", "4K", "-f", "8", "-d", "all", "-c", "1",
                             "-n", "1", "-w", "0", "--backend", "nccl"], env)
        n += check_rows(doc, "nccl", ["allreduce", "allgather"], "nccl")
        doc = sweep_json(2, ["all", "-b", "8", "-e", "64K", "-f", "8", "-c", "1", "-n", "2", "-w", "1",
                             "--backend", "smddp", "-o", FAKE_OPS], env)
        n += check_rows(doc, "smddp", ALL, "cuda_staged")
        print(f"{n} rows exact under CUDA's ordering rules")


def test_fake_many_chunks():
    """cuda_staged with SMDDP_CUDA_CHUNK_BYTES=1024 on 2 ranks: many chunks per call, every collective exact."""
    with tempfile.TemporaryDirectory() as tmp:
        env = fake_env(tmp, {"SMDDP_CUDA_CHUNK_BYTES": "1024"})
        doc = sweep_json(2, ["all", "-b", "8", "-e", "256K", "-f", "4", "-c", "1", "-n", "1", "-w", "0",
                             "--backend", "smddp", "-o", FAKE_OPS], env)
        n = check_rows(doc, "smddp", ALL, "cuda_staged")
        biggest = max(x["bytes"] for x in doc["rows"])
        if biggest < 64 * 1024:
            fail(f"largest row {biggest} B: too few chunks")
        print(f"{n} rows up to {biggest} B in 1 KiB chunks, all #wrong 0")


def test_fake_host_mapping():
    """Devices by rank among the processes of the host, not by (virtual) node: SMDDP_RANKS_PER_NODE=1, 2 GPUs."""
    with tempfile.TemporaryDirectory() as tmp:
        env = fake_env(tmp, {"FAKE_CUDA_DEVICES": "2", "SMDDP_RANKS_PER_NODE": "1"})
        sweep_json(2, ["allreduce", "-b", "8", "-e", "1K", "-c", "1", "-n", "1", "-w", "0", "-o", "sum"], env)
        devices = {}
        for pid, _, call in fake_log(tmp):
            if call.startswith("cudaSetDevice "):
                devices.setdefault(pid, set()).add(int(call.split()[1]))
        if sorted(min(v) for v in devices.values()) != [0, 1]:
            fail(f"ranks chose devices {devices}, want 0 and 1")
        print(f"ranks on devices {sorted(min(v) for v in devices.values())}")


def test_fake_listed_unusable():
    """A GPU nvidia-smi lists but the runtime cannot use (driver too old) is exit 3 with the runtime's reason;
    no GPU listed is exit 64 'no CUDA device'."""
    with tempfile.TemporaryDirectory() as tmp:
        args = ["allreduce", "-b", "8", "-e", "8", "--mem", "cuda"]
        rc, _, e = tcp_run(1, args, fake_env(tmp, {"FAKE_CUDA_DEVICES": "insufficient"}, smi_lists=True))[0]
        if rc != 3 or "cudaErrorInsufficientDriver" not in e or "lists 1 GPU" not in e:
            fail(f"GPU listed, driver insufficient: exit {rc}, stderr {e!r}; want 3 with the runtime's reason")
        rc, _, e = tcp_run(1, args, fake_env(tmp, {"FAKE_CUDA_DEVICES": "insufficient"}))[0]
        lines = e.strip().splitlines()
        if rc != 64 or len(lines) != 1 or "no CUDA device on host" not in lines[0]:
            fail(f"nothing listed: exit {rc}, stderr {e!r}; want 64 and one 'no CUDA device' line")
        print("listed but unusable: exit 3 with the reason; nothing listed: exit 64")


def test_fake_pitch():
    """Blocks wider than cudaDevAttrMaxPitch (here 4 KiB) go row by row: allgather, reducescatter, alltoall exact."""
    with tempfile.TemporaryDirectory() as tmp:
        env = fake_env(tmp, {"FAKE_CUDA_MAX_PITCH": "4096", "SMDDP_CUDA_CHUNK_BYTES": "65536"})
        doc = sweep_json(2, ["allgather", "reducescatter", "alltoall", "-b", "1K", "-e", "1M", "-f", "8", "-c", "1",
                             "-n", "1", "-w", "0", "--backend", "smddp", "-o", "sum"], env)
        n = check_rows(doc, "smddp", ["allgather", "reducescatter", "alltoall"], "cuda_staged")
        pitches = [int(m.group(1)) for _, _, c in fake_log(tmp) for m in [re.search(r"dpitch=(\d+)", c)] if m]
        if not pitches:
            fail("no cudaMemcpy2DAsync at all: the small rows should use it")
        if max(pitches) > 4096:
            fail(f"cudaMemcpy2DAsync called with pitch {max(pitches)} > cudaDevAttrMaxPitch 4096")
        print(f"{n} rows exact; {len(pitches)} 2D copies, all within the pitch limit")


def test_fake_wait_error():
    """A CUDA error while waiting on a stream or event is exit 3 (docs/gpu.md), naming the runtime's error."""
    with tempfile.TemporaryDirectory() as tmp:
        for backend, np in (("nccl", 1), ("smddp", 2)):
            for after in ("0", "4", "40"):
                env = fake_env(tmp, {"FAKE_CUDA_FAIL_WAITS": after})
                results = tcp_run(np, ["allreduce", "-b", "1K", "-e", "64K", "-n", "5", "-w", "1", "-o", "sum",
                                       "-T", "20", "--mem", "cuda", "--backend", backend], env, 120)
                rcs = [rc for rc, _, _ in results]
                errs = "".join(e for _, _, e in results)
                if 3 not in rcs or any(rc not in (0, 3) for rc in rcs) or "cudaErrorLaunchFailure" not in errs:
                    fail(f"{backend}, wait {after} fails: exits {rcs}, stderr {errs[-1500:]!r}; want 3 and the error")
        print("wait failures end with exit 3 and the runtime's error")


def test_fake_diag_gpu_order():
    """smddp-diag numbers GPUs in PCI bus-id order, whatever the CUDA ordinals are."""
    with tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ, **fake_env(tmp, {"FAKE_CUDA_DEVICES": "2",
                                                "FAKE_CUDA_BUSIDS": "0000:b0:00.0,0000:10:00.0"}))
        r = run([ARGS.diag, "topo", "--json"], timeout=120, env=env)
        if r.returncode != 0:
            fail(f"smddp-diag topo: exit {r.returncode}: {r.stderr[-1500:]}")
        gpus = {g["busid"]: g["index"] for g in json.loads(r.stdout)["gpus"]}
        if gpus.get("0000:10:00.0") != 0 or gpus.get("0000:b0:00.0") != 1:
            fail(f"GPU indices {gpus}: want 0000:10:00.0 -> 0, 0000:b0:00.0 -> 1")
        print(f"GPU order {gpus}")


def test_fake_one_runtime():
    """Every CUDA binary links the shared CUDA runtime once and carries no static copy of it."""
    for binary in (ARGS.bench, ARGS.diag, ARGS.micro, ARGS.kernels):
        needed = run(["readelf", "-d", binary]).stdout
        if "libcudart.so" not in needed:
            fail(f"{binary}: does not link libcudart.so")
        symbols = run(["nm", binary]).stdout + run(["nm", "-D", "--defined-only", binary]).stdout
        static = [line for line in symbols.splitlines() if re.search(r" [TtWw] cudaGetDeviceCount$", line)]
        if static:
            fail(f"{binary}: defines {static[0]!r}: a static CUDA runtime beside the shared one")
    print("one shared CUDA runtime per binary")


def test_fake_kernel_refusals():
    """cuda::reduce refuses pointers not aligned to their element size (they fault on a GPU)."""
    with tempfile.TemporaryDirectory() as tmp:
        r = run([ARGS.kernels, "--refusals-only"], timeout=60, env=dict(os.environ, **fake_env(tmp)))
        if r.returncode != 0 or "misaligned pointers refused" not in r.stdout:
            fail(f"exit {r.returncode}: {r.stdout[-1000:]} {r.stderr[-1000:]}")
        print(r.stdout.strip())


def main():
    global ARGS
    parser = argparse.ArgumentParser()
    parser.add_argument("--bench", required=True)
    parser.add_argument("--mpirun", help="unused: ranks start through the TCP store")
    parser.add_argument("--micro")
    parser.add_argument("--kernels")
    parser.add_argument("--diag")
    parser.add_argument("--fake-cuda")
    parser.add_argument("test")
    ARGS = parser.parse_args()
    fn = globals().get("test_" + ARGS.test)
    if not fn:
        print(f"gpu_e2e.py: unknown test {ARGS.test!r}", file=sys.stderr)
        sys.exit(64)
    fn()
    print("PASS", ARGS.test)


if __name__ == "__main__":
    main()
