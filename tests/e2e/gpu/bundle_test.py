#!/usr/bin/env python3
"""The device bundle (scripts/device-bundle.sh) on this machine:
 - every binary in it resolves each library (the whole closure) inside the bundle or
   to the allowed system set (the driver's, glibc's, and libnccl from the
   wheel/system), checked with ldd under a cleared environment;
 - a copy of it in a temporary folder runs its CPU paths: smddp-bench
   --mem host on 2 ranks through the TCP store, smddp-diag topo;
 - the copy's --mem cuda path with the stand-in runtime (fake_cuda.cc), 1 KiB
   staging chunks;
 - the copy's device-check.sh: no GPU listed -> 77; a GPU listed that this
   machine cannot use -> 1, the rows failed.
Usage: bundle_test.py --bundle DIR --fake-cuda LIB
"""
import argparse
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile

ALLOWED = re.compile(r"^(linux-vdso|ld-linux[-\w]*|libc|libm|libpthread|libdl|librt|libutil|libresolv|"
                     r"libcuda|libnvidia-ml|libnccl)\.so")
MAX_MIB = 48


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


def ldd_check(bundle):
    checked = 0
    # The binaries: ldd lists the whole closure as the loader resolves it from
    # them (their DT_RPATH also serves the bundled libraries' dependencies).
    for sub in ("bin",):
        for name in sorted(os.listdir(os.path.join(bundle, sub))):
            path = os.path.join(bundle, sub, name)
            r = subprocess.run(["env", "-i", "ldd", path], capture_output=True, text=True)
            if r.returncode != 0:
                fail(f"ldd {path}: {r.stdout} {r.stderr}")
            for line in r.stdout.splitlines():
                m = re.match(r"\s*(\S+) => (\S+)", line)
                if not m:
                    continue
                lib, where = m.groups()
                if ALLOWED.match(lib):
                    continue
                if where == "not" or not os.path.realpath(where).startswith(os.path.realpath(bundle) + os.sep):
                    fail(f"{sub}/{name}: {lib} resolves to {where}, outside the bundle")
            checked += 1
    for name in os.listdir(os.path.join(bundle, "bin")):
        dyn = subprocess.run(["readelf", "-d", os.path.join(bundle, "bin", name)], capture_output=True, text=True).stdout
        if not re.search(r"\(RPATH\).*\[\$ORIGIN/\.\./lib\]", dyn):
            fail(f"bin/{name}: no DT_RPATH $ORIGIN/../lib:\n{dyn}")
    return checked


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def tcp_ranks(bench, np, args, extra=None, timeout=180):
    port = free_port()
    base = {"PATH": "/usr/bin:/bin", "HOME": os.environ.get("HOME", "/tmp")}
    procs = []
    for r in range(np):
        env = dict(base, RANK=str(r), WORLD_SIZE=str(np), LOCAL_RANK=str(r), LOCAL_WORLD_SIZE=str(np),
                   MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), **(extra or {}))
        procs.append(subprocess.Popen([bench, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                      env=env))
    out = []
    for p in procs:
        try:
            o, e = p.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            for q in procs:
                q.kill()
            fail(f"{args}: ranks did not finish")
        out.append((p.returncode, o, e))
    return out


def sweep(bench, np, args, extra, tmp, memory):
    path = os.path.join(tmp, "out.json")
    for rc, _, e in tcp_ranks(bench, np, [*args, "-J", path], extra):
        if rc != 0:
            fail(f"{args}: exit {rc}: {e[-2000:]}")
    doc = json.load(open(path))
    if not doc["complete"] or doc["devices"]["memory"] != memory:
        fail(f"{args}: incomplete or not --mem {memory}")
    wrong = [x for x in doc["rows"] if x["collective"] != "barrier" and x["wrong"]]
    if wrong or not doc["rows"]:
        fail(f"{args}: {len(doc['rows'])} rows, wrong: {wrong[:3]}")
    return len(doc["rows"])


def device_check(copy, tmp, lists):
    smi_dir = os.path.join(tmp, f"smi-{lists}")
    os.makedirs(smi_dir, exist_ok=True)
    with open(os.path.join(smi_dir, "nvidia-smi"), "w") as f:
        f.write("#!/bin/sh\n" + ("[ \"$1\" = -L ] && echo 'GPU 0: NVIDIA H200 (UUID: GPU-fake)'\nexit 0\n" if lists
                                 else "echo 'No devices were found'\nexit 6\n"))
    os.chmod(os.path.join(smi_dir, "nvidia-smi"), 0o755)
    out = os.path.join(tmp, f"check-{lists}")
    env = dict(os.environ, PATH=smi_dir + os.pathsep + os.environ["PATH"], DEVICE_CHECK_OUT=out,
               DEVICE_CHECK_SECONDS="200", SMDDP_NVML_LIBRARY="libnvidia-ml-absent.so.1")
    env.pop("OUT", None)
    r = subprocess.run(["bash", os.path.join(copy, "device-check.sh")], capture_output=True, text=True, env=env,
                       timeout=290)
    return r, open(os.path.join(out, "device-check.md")).read()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--bundle", required=True)
    parser.add_argument("--fake-cuda", required=True)
    a = parser.parse_args()
    size = sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(a.bundle) for f in fs)
    if size > MAX_MIB << 20:
        fail(f"bundle is {size >> 20} MiB, over {MAX_MIB} MiB")
    checked = ldd_check(a.bundle)
    print(f"{checked} binaries resolve inside the bundle or to the allowed set; {size >> 20} MiB")
    with tempfile.TemporaryDirectory() as tmp:
        copy = os.path.join(tmp, "bundle")
        shutil.copytree(a.bundle, copy, symlinks=True)
        bench = os.path.join(copy, "bin", "smddp-bench")
        n = sweep(bench, 2, ["all", "-b", "8", "-e", "1M", "-f", "8", "-c", "1", "-n", "2", "-w", "1", "--mem", "host"],
                  None, tmp, "host")
        print(f"copy: smddp-bench --mem host, 2 ranks via the TCP store: {n} rows, #wrong 0")
        fake = os.path.join(tmp, "libfake_cuda.so")
        shutil.copy(a.fake_cuda, fake)
        n = sweep(bench, 2, ["all", "-b", "8", "-e", "64K", "-f", "8", "-c", "1", "-n", "1", "-w", "0", "-o",
                             "sum,max", "--mem", "cuda"],
                  {"LD_PRELOAD": fake, "SMDDP_CUDA_CHUNK_BYTES": "1024", "SMDDP_NVML_LIBRARY": "libnvidia-ml-absent.so.1"},
                  tmp, "cuda")
        print(f"copy: --mem cuda with the stand-in runtime, 1 KiB chunks: {n} rows, #wrong 0")
        r = subprocess.run([os.path.join(copy, "bin", "smddp-diag"), "topo", "--json"], capture_output=True,
                           text=True, env={"PATH": "/usr/bin:/bin", "SMDDP_NVML_LIBRARY": "libnvidia-ml-absent.so.1"},
                           timeout=120)
        if r.returncode != 0 or "gpus" not in json.loads(r.stdout):
            fail(f"copy: smddp-diag topo --json: exit {r.returncode}: {r.stderr[-1000:]}")
        r, table = device_check(copy, tmp, lists=False)
        if r.returncode != 77 or "| FAIL |" in table:
            fail(f"copy: device-check.sh, no GPU listed: exit {r.returncode}, want 77 and no FAIL\n{table}")
        r, table = device_check(copy, tmp, lists=True)
        if r.returncode != 1 or "| SKIP |" in table or "reduction kernels = host, every dtype x op, guards | FAIL" not in table:
            fail(f"copy: device-check.sh, a GPU listed but unusable: exit {r.returncode}, want 1 with failed rows\n{table}")
        print("copy: device-check.sh: no GPU listed 77; an unusable GPU listed 1")
    print("PASS bundle")


if __name__ == "__main__":
    main()
