"""smddp-diag topo: this host, hwloc XML, NCCL XML and a fake sysfs tree."""

import json
import os
import re

import fixtures
from harness import case, check, diag, equal, host_has_efa, host_has_nvml, nvml_env


@case
def topo_here(tmp):
    gpus, efa = host_has_nvml(), host_has_efa()
    p = diag("topo", check_rc=0)
    if not gpus:
        check("no NVIDIA GPU" in p.stdout and "NVML not available" in p.stdout, "topo says plainly there is no GPU", p.stdout)
    if not efa:
        check("no EFA device" in p.stdout, "topo says plainly there is no EFA device", p.stdout)
    j = json.loads(diag("topo", "--json", check_rc=0).stdout)
    if not gpus:
        equal(j["gpus"], [], "no GPU listed without NVIDIA's driver")
    equal(any(n["kind"] == "efa" for n in j["nics"]), efa, "EFA NICs listed exactly when this host has EFA")
    cpus = len(os.sched_getaffinity(0))
    with open("/proc/cpuinfo") as f:
        online = sum(1 for l in f if l.startswith("processor"))
    check(j["pus"] in (cpus, online), f"PUs {j['pus']} match this machine ({cpus} usable, {online} online)")
    check(j["cores"] >= 1 and j["packages"] >= 1 and j["numa_nodes"] >= 1, "counts of packages, NUMA nodes, cores", json.dumps(j))
    # hwloc sums the NUMA nodes' MemTotal, which a VM can report apart from /proc/meminfo.
    totals = []
    for path in ["/proc/meminfo"] + [f"/sys/devices/system/node/{n}/meminfo" for n in os.listdir("/sys/devices/system/node")
                                     if n.startswith("node")] if os.path.isdir("/sys/devices/system/node") else ["/proc/meminfo"]:
        with open(path) as f:
            totals.append(int(re.search(r"MemTotal:\s+(\d+)", f.read()).group(1)) * 1024)
    candidates = [totals[0], sum(totals[1:])]
    check(any(abs(j["memory_bytes"] - t) < t * 0.1 for t in candidates if t), f"memory {j['memory_bytes']} near {candidates}")
    # With the NVML stand-in the same host reports eight A100s, from NVML
    # only. On a GPU host the real GPUs' PCI entries may sit beside them:
    # there the stand-in's eight are picked out by model, and must all be there.
    j = json.loads(diag("topo", "--json", env=nvml_env(count=8), check_rc=0).stdout)
    fake = [g for g in j["gpus"] if g["model"] == "NVIDIA A100-SXM4-40GB"]
    equal(len(fake), 8, "GPUs from the NVML stand-in")
    if not gpus:
        equal(len(j["gpus"]), 8, "no GPU beside the stand-in's")
    equal(fake[3]["busid"], "0000:20:1d.0", "GPU 3 bus id from NVML")
    equal(fake[3]["memory_bytes"], 42949672960, "GPU memory from NVML")


EXPECTED_HWLOC = {  # (row, column): relation
    ("GPU0", "GPU1"): "PIX", ("GPU0", "NIC0"): "PIX", ("GPU2", "NIC1"): "PIX", ("GPU4", "NIC2"): "PIX",
    ("GPU6", "GPU7"): "PIX", ("GPU2", "GPU3"): "PXB", ("GPU3", "NIC1"): "PXB", ("GPU4", "GPU6"): "PHB",
    ("GPU5", "NIC3"): "PHB", ("NIC2", "NIC3"): "PHB", ("GPU0", "GPU2"): "NODE", ("GPU0", "NIC1"): "NODE",
    ("NIC0", "NIC1"): "NODE", ("GPU0", "GPU4"): "SYS", ("GPU3", "NIC3"): "SYS", ("NIC0", "NIC2"): "SYS",
}


def matrix_of(j):
    labels = j["matrix"]["labels"]
    rows = j["matrix"]["rows"]
    return {(a, b): rows[i][k] for i, a in enumerate(labels) for k, b in enumerate(labels)}


def check_matrix(j, expected):
    m = matrix_of(j)
    for (a, b), rel in expected.items():
        equal(m[(a, b)], rel, f"relation {a}-{b}")
        equal(m[(b, a)], rel, f"relation {b}-{a} (symmetric)")
    for label in j["matrix"]["labels"]:
        equal(m[(label, label)], "X", f"{label} to itself")


@case
def topo_hwloc_xml(tmp):
    path = os.path.join(tmp, "p4d-like.xml")
    fixtures.write_hwloc_xml(path)
    j = json.loads(diag("topo", "--hwloc-xml", path, "--json", check_rc=0).stdout)
    equal((j["packages"], j["numa_nodes"], j["cores"], j["pus"]), (2, 2, 48, 96), "packages, NUMA nodes, cores, PUs")
    equal(j["memory_bytes"], 2 * fixtures.NUMA_MEMORY, "memory")
    equal(j["hostname"], "p4d-test-host", "host name from the XML")
    equal([(c["name"], c["count"], c["size_bytes"]) for c in j["caches"]],
          [("L1d", 48, 32768), ("L2", 48, 1048576), ("L3", 2, 37748736)], "caches")
    equal([n["cpus"] for n in j["numa"]], ["0-47", "48-95"], "NUMA CPU lists")
    equal([g["busid"] for g in j["gpus"]], fixtures.GPU_BUSIDS, "GPUs in PCI order")
    equal([(n["busid"], n["name"], n["kind"]) for n in j["nics"]],
          list(zip(fixtures.NIC_BUSIDS, fixtures.NIC_NAMES, ["efa"] * 4)), "EFA NICs")
    equal([g["numa"] for g in j["gpus"]], [0, 0, 0, 0, 1, 1, 1, 1], "GPU NUMA affinity")
    check_matrix(j, EXPECTED_HWLOC)
    equal([(a["gpu"], a["nics"], a["relation"]) for a in j["affinity"]],
          [("GPU0", ["NIC0"], "PIX"), ("GPU1", ["NIC0"], "PIX"), ("GPU2", ["NIC1"], "PIX"), ("GPU3", ["NIC1"], "PXB"),
           ("GPU4", ["NIC2"], "PIX"), ("GPU5", ["NIC2"], "PIX"), ("GPU6", ["NIC3"], "PIX"), ("GPU7", ["NIC3"], "PIX")],
          "nearest NIC of each GPU")
    text = diag("topo", "--hwloc-xml", path, check_rc=0).stdout
    check(re.search(r"^GPU3 +NODE +NODE +PXB +X +SYS", text, re.M), "text matrix row of GPU3", text)
    check("GPU3: NUMA 0, CPUs 0-47, nearest NIC NIC1 (PXB)" in text, "text affinity of GPU3", text)


@case
def topo_nccl_xml(tmp):
    dump = os.path.join(tmp, "nccl-dump.xml")
    fixtures.write_nccl_dump_xml(dump)
    j = json.loads(diag("topo", "--nccl-topo", dump, "--json", check_rc=0).stdout)
    equal((j["numa_nodes"], len(j["gpus"]), len(j["nics"]), j["pci_bridges"]), (2, 8, 4, 4), "NUMA nodes, GPUs, NICs, switches")
    equal([n["name"] for n in j["nics"]], fixtures.NIC_NAMES, "NIC names from <net>")
    equal([n["cpus"] for n in j["numa"]], ["0-47", "48-95"], "CPU lists from the affinity masks")
    expected = {("GPU0", "GPU7"): "NV12", ("GPU0", "GPU1"): "NV12", ("GPU0", "NIC0"): "PIX", ("GPU1", "NIC1"): "PHB",
                ("GPU2", "NIC1"): "PIX", ("GPU4", "NIC3"): "PHB", ("GPU0", "NIC2"): "SYS", ("NIC0", "NIC1"): "PHB",
                ("NIC1", "NIC3"): "SYS"}
    check_matrix(j, expected)
    aws = os.path.join(tmp, "p4d-24xl-topo.xml")
    fixtures.write_nccl_aws_xml(aws)
    j = json.loads(diag("topo", "--nccl-topo", aws, "--json", check_rc=0).stdout)
    equal((len(j["gpus"]), len(j["nics"])), (8, 4), "GPUs and NICs of AWS's static file")
    check_matrix(j, {("GPU0", "GPU1"): "PIX", ("GPU0", "NIC0"): "PIX", ("GPU0", "GPU2"): "PHB", ("GPU1", "NIC1"): "PHB",
                     ("GPU0", "GPU4"): "SYS", ("GPU7", "NIC3"): "PIX", ("NIC0", "NIC3"): "SYS"})
    equal([a["nics"] for a in j["affinity"]], [["NIC0"], ["NIC0"], ["NIC1"], ["NIC1"], ["NIC2"], ["NIC2"], ["NIC3"], ["NIC3"]],
          "nearest NIC per GPU")


@case
def topo_fake_sysfs(tmp):
    root = os.path.join(tmp, "root")
    fixtures.write_sysfs(root, efa=4)
    p = diag("--sysfs-root", root, "topo", "--json", check_rc=0)
    j = json.loads(p.stdout)
    efa = [n for n in j["nics"] if n["kind"] == "efa"]
    equal(sorted((n["busid"], n["name"], n["numa"]) for n in efa),
          sorted(zip(fixtures.EFA_BUSIDS, fixtures.EFA_NAMES, [0, 0, 1, 1])), "EFA devices from sysfs")
    ena = [n for n in j["nics"] if n["kind"] == "ena"]
    equal([n["name"] for n in ena], ["ens5"], "ENA device from /sys/class/net")
    check(not any("no EFA device" in n for n in j["notes"]), "no 'no EFA' note with EFA devices", json.dumps(j["notes"]))
    # The environment variable works like the option.
    j = json.loads(diag("topo", "--json", env={"SMDDP_SYSFS_ROOT": root}, check_rc=0).stdout)
    equal(len([n for n in j["nics"] if n["kind"] == "efa"]), 4, "EFA devices via SMDDP_SYSFS_ROOT")
