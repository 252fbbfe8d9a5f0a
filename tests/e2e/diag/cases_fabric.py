"""smddp-diag fabric: providers, EFA counters from sysfs, the ping-pong matrix under mpirun."""

import json
import os
import re

import fixtures
from harness import HOST, case, check, diag, equal, mpi_env


@case
def fabric_providers(tmp):
    for provider, expect in (("tcp", "tcp;ofi_rxm"), ("shm", "shm")):
        j = json.loads(diag("fabric", "--provider", provider, "--json", check_rc=0).stdout)
        names = {p["provider"] for p in j["providers"]}
        check(expect in names, f"{provider}: {expect} listed", json.dumps(sorted(names)))
        rdm = [p for p in j["providers"] if p["ep_type"] == "FI_EP_RDM"]
        check(rdm and all(p["max_msg_size"] > 0 for p in rdm), f"{provider}: RDM endpoints with a message size limit")
        check(any("FI_TAGGED" in p["caps"] for p in rdm), f"{provider}: tagged messages")
        equal(j["rdma_devices"], [], f"{provider}: no RDMA device here")
    p = diag("fabric", "--provider", "tcp", check_rc=0)
    check("EFA: none on this host" in p.stdout, "fabric says plainly there is no EFA", p.stdout)
    p = diag("fabric", "--provider", "efa", check_rc=69)
    check("'efa' is not available on this host" in p.stderr and "tcp" in p.stderr, "efa missing is named", p.stderr)
    equal(len(p.stderr.strip().splitlines()), 1, "one line for a missing provider")


@case
def fabric_sysfs_counters(tmp):
    root = os.path.join(tmp, "root")
    fixtures.write_sysfs(root, efa=4, down=(2,))
    j = json.loads(diag("fabric", "--provider", "tcp", "--json", "--sysfs-root", root, check_rc=0).stdout)
    devs = {d["name"]: d for d in j["rdma_devices"]}
    equal(sorted(devs), sorted(fixtures.EFA_NAMES), "EFA devices discovered")
    for i, name in enumerate(fixtures.EFA_NAMES):
        d = devs[name]
        equal((d["efa"], d["busid"]), (True, fixtures.EFA_BUSIDS[i]), f"{name} identity")
        port = d["ports"][0]
        equal(port["state"], "DOWN" if i == 2 else "ACTIVE", f"{name} port state")
        want = {c: fixtures.counter_value(i, c) for c in fixtures.COUNTERS if c != "lifespan"}
        equal(port["counters"], want, f"{name} hw_counters (lifespan is not a counter)")
    text = diag("fabric", "--provider", "tcp", "--sysfs-root", root, check_rc=0).stdout
    check("RDMA device rdmap32s27 (EFA, PCI 0000:20:1b.0)" in text and "EFA: none" not in text, "text lists EFA devices", text)
    check(re.search(r"tx_bytes +2000000", text), "text shows counter values", text)


def pairs_of(j):
    return [(l["a"], l["b"]) for l in j["pingpong"]["links"]]


@case
def fabric_pairs_np3(tmp):
    p = diag("fabric", "--provider", "tcp", "--json", "--slow-factor", "0", "--bw-bytes", "256K", "--latency-iters", "20",
             mpi=3, env=mpi_env(), check_rc=0)
    j = json.loads(p.stdout)
    pp = j["pingpong"]
    equal((pp["ranks"], pp["rounds"], pp["sampled"]), (3, 3, False), "3 ranks in 3 rounds, all pairs")
    equal(pairs_of(j), [(0, 1), (0, 2), (1, 2)], "every pair once")
    check(pp["provider"]["provider"] == "tcp;ofi_rxm", "tcp with rxm for RDM", json.dumps(pp["provider"]))
    for l in pp["links"]:
        check(0 < l["latency_us"] < 1e6 and 0 < l["bandwidth_gbs"] < 1e4, f"link {l} has plausible numbers")
    equal(pp["flagged"], [], "nothing flagged without thresholds")
    # Text matrix over shm, and an impossible bandwidth floor flags every link.
    p = diag("fabric", "--provider", "shm", "--min-bw", "1000000", "--slow-factor", "0", "--bw-bytes", "64K",
             "--latency-iters", "10", mpi=3, env=mpi_env(), check_rc=1)
    check(re.search(r"^ +r1 +[0-9.]+\* +- +[0-9.]+\*$", p.stdout, re.M), "bandwidth row of r1 with flagged cells", p.stdout)
    check("Flagged links (3):" in p.stdout, "three flagged links", p.stdout)
    check(f"r0 ({HOST}) <-> r2 ({HOST}):" in p.stdout and "< minimum 1000000.000 GB/s" in p.stdout, "flag names both ends and the reason", p.stdout)
