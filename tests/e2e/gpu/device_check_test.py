#!/usr/bin/env python3
"""scripts/device-check.sh's verdicts, with a stand-in nvidia-smi on PATH and
a stand-in bundle whose programs behave like a machine with no GPU, a GPU
that cannot be used, or a usable GPU. Usage: device_check_test.py DEVICE_CHECK_SH
"""
import os
import shutil
import subprocess
import sys
import tempfile

STUB = r'''#!/usr/bin/env python3
import json, os, sys
mode = os.environ["STUB_MODE"]  # none | unusable | pass
name = os.path.basename(sys.argv[0])
args = sys.argv[1:]
test = args[-1] if args else ""
if name == "smddp-diag":
    print("ok"); sys.exit(0)
if mode == "pass" and test and test == os.environ.get("STUB_SKIP"):
    print("SKIP: needs something"); sys.exit(77)
if name == "cuda_kernels_test":
    if mode == "pass":
        print("4200 cases, 0 failed, seed 1"); sys.exit(0)
    print("SKIP: no CUDA device (cudaErrorInsufficientDriver)"); sys.exit(77)
if name == "smddp-micro-cuda":
    if mode != "pass":
        print("SKIP: no CUDA device (cudaErrorNoDevice)"); sys.exit(77)
    print("# device 0: Stand-in GPU")
    print("%-40s %10s %8s" % ("# test", "GB/s", "of copy"))
    for row, gbps in (("d2d copy (copy kernel)", 2000.0), ("reduce_into sum float32", 1700.0), ("divide float32", 1500.0)):
        print("%-40s %10.1f %8.2f" % (row, gbps, gbps / 2000.0))
    print("%-40s %10.1f %8s" % ("h2d pinned", 50.0, "-"))
    sys.exit(0)
if name == "smddp-bench":
    if mode == "none":
        print("smddp-bench: --mem cuda: no CUDA device on host h (cudaErrorNoDevice)", file=sys.stderr); sys.exit(64)
    if mode == "unusable":
        print("smddp-bench: --mem cuda: nvidia-smi -L lists 1 GPU(s) on host h but the CUDA runtime cannot use "
              "them: cudaErrorInsufficientDriver", file=sys.stderr); sys.exit(3)
    if os.environ.get("RANK", "0") == "0":
        path = args[args.index("-J") + 1]
        backend = args[args.index("--backend") + 1]
        rows = [{"placement": "out-of-place", "bytes": 64 << 20, "busbw_gbps": 123.4, "time_us": 987.0,
                 "algorithm": "nccl" if backend == "nccl" else "cuda_staged", "wrong": 0}]
        json.dump({"rows": rows}, open(path, "w"))
    sys.exit(0)
# tests/gpu_e2e.py and tests/torch_nccl.py
if mode == "pass":
    print("PASS " + test); sys.exit(0)
print("FAIL: nvidia-smi -L lists 1 GPU(s) but smddp-bench --mem cuda exits 3" if mode == "unusable"
      else "SKIP: no CUDA device (nvidia-smi -L lists no GPU)")
sys.exit(1 if mode == "unusable" else 77)
'''


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


def make_bundle(root, script):
    for d in ("bin", "tests", "lib", "share/smddp/profiles"):
        os.makedirs(os.path.join(root, d), exist_ok=True)
    for rel in ("bin/smddp-bench", "bin/smddp-diag", "bin/smddp-micro-cuda", "bin/cuda_kernels_test",
                "tests/gpu_e2e.py", "tests/torch_nccl.py"):
        path = os.path.join(root, rel)
        with open(path, "w") as f:
            f.write(STUB)
        os.chmod(path, 0o755)
    shutil.copy(script, os.path.join(root, "device-check.sh"))


def stand_in_smi(bindir, lists):
    os.makedirs(bindir, exist_ok=True)
    path = os.path.join(bindir, "nvidia-smi")
    with open(path, "w") as f:
        if lists:
            f.write("#!/bin/sh\nif [ \"$1\" = -L ]; then echo 'GPU 0: NVIDIA H200 (UUID: GPU-fake)'; "
                    "else echo 'NVIDIA H200, 9.0, 580.00, 143771 MiB'; fi\n")
        else:
            f.write("#!/bin/sh\necho 'No devices were found'\nexit 6\n")
    os.chmod(path, 0o755)


def device_check(tmp, mode, lists, skip=None, args=()):
    bundle = os.path.join(tmp, f"bundle-{mode}-{lists}-{skip}")
    out = bundle + "-out"
    make_bundle(bundle, sys.argv[1])
    stand_in_smi(os.path.join(bundle, "smi"), lists)
    env = dict(os.environ, STUB_MODE=mode, DEVICE_CHECK_OUT=out, DEVICE_CHECK_SECONDS="200",
               PATH=os.path.join(bundle, "smi") + os.pathsep + os.environ["PATH"])
    env.pop("OUT", None)
    if skip:
        env["STUB_SKIP"] = skip
    r = subprocess.run(["bash", os.path.join(bundle, "device-check.sh"), *args], capture_output=True, text=True,
                       env=env, timeout=280)
    table = open(os.path.join(out, "device-check.md")).read() if os.path.exists(os.path.join(out, "device-check.md")) else ""
    return r, table


def main():
    if len(sys.argv) != 2:
        print("usage: device_check_test.py DEVICE_CHECK_SH", file=sys.stderr)
        sys.exit(64)
    with tempfile.TemporaryDirectory() as tmp:
        r, _ = device_check(tmp, "pass", True, args=["--bogus"])
        if r.returncode != 64 or len(r.stderr.strip().splitlines()) != 1:
            fail(f"bad usage: exit {r.returncode}, stderr {r.stderr!r}; want 64 and one line")

        r, table = device_check(tmp, "none", False)
        if r.returncode != 77 or "SKIP: nvidia-smi lists no GPU" not in r.stdout or "| FAIL |" in table:
            fail(f"no GPU: exit {r.returncode}; want 77, SKIP rows, no FAIL\n{r.stdout[-2000:]}")
        if "| SKIP |" not in table:
            fail(f"no GPU: the table should show the skips\n{table}")

        r, table = device_check(tmp, "unusable", True)
        if r.returncode != 1:
            fail(f"GPU listed but unusable: exit {r.returncode}, want 1\n{r.stdout[-2000:]}")
        if "skipped although nvidia-smi lists 1 GPU(s)" not in table or "| SKIP |" in table:
            fail(f"GPU listed but unusable: skips must become failures\n{table}")
        if "allreduce float32 64 MiB, nccl, 1 rank(s) | FAIL | exit 3" not in table:
            fail(f"GPU listed but unusable: the bench row must fail with exit 3\n{table}")

        r, table = device_check(tmp, "pass", True)
        if r.returncode != 0 or "| FAIL |" in table or "| SKIP |" in table:
            fail(f"usable GPU: exit {r.returncode}, want 0 and no FAIL/SKIP\n{r.stdout[-2000:]}\n{table}")
        for want in ("| reduction kernels = host, every dtype x op, guards | PASS |",
                     "| d2d copy (copy kernel) | 2000.0 GB/s | 1.00 of copy |",
                     "| divide float32 | 1500.0 GB/s | 0.75 of copy (below the 0.80 target) |",
                     "| e2e smddp_many_chunks | PASS |", "| e2e fork_maps | PASS |",
                     "| allreduce float32 64 MiB, smddp, 2 rank(s) | busbw 123.4 GB/s | 987 us, cuda_staged, #wrong 0 |",
                     "| e2e nccl_collectives_multi, nccl_kill_rank | n/a | need 2 GPUs, 1 listed |"):
            if want not in table:
                fail(f"usable GPU: {want!r} not in the table\n{table}")

        r, table = device_check(tmp, "pass", True, skip="smddp_many_chunks")
        if r.returncode != 1 or "| e2e smddp_many_chunks | FAIL | skipped although" not in table:
            fail(f"usable GPU, one test skipped: exit {r.returncode}, want 1 and that row failed\n{table}")
    print("PASS device-check verdicts: usage 64, no GPU 77, unusable 1, usable 0, a skip with a GPU 1")


if __name__ == "__main__":
    main()
