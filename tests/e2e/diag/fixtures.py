"""Input files the smddp-diag tests write: a realistic 2-socket GPU host as
hwloc XML and as NCCL topology XML, a fake sysfs/proc tree, and profiles."""

import os

# The host the topology files describe (p4d-like, 2 sockets, 8 GPUs, 4 EFA):
#   socket 0  host bridge A: switch S0 -> GPU0, GPU1, NIC0
#             host bridge B: switch S1 -> GPU2, NIC1, and a nested switch -> GPU3
#   socket 1  host bridge C: switch S2 -> GPU4, GPU5, NIC2
#                            switch S3 -> GPU6, GPU7, NIC3
# so the matrix has every relation: PIX (same switch), PXB (GPU3 behind two
# switches), PHB (S2 vs S3), NODE (A vs B), SYS (socket 0 vs socket 1).
GPU_BUSIDS = ["0000:12:00.0", "0000:13:00.0", "0000:22:00.0", "0000:26:00.0",
              "0000:92:00.0", "0000:93:00.0", "0000:a2:00.0", "0000:a3:00.0"]
NIC_BUSIDS = ["0000:14:00.0", "0000:23:00.0", "0000:94:00.0", "0000:a4:00.0"]
NIC_NAMES = ["rdmap20s0", "rdmap35s0", "rdmap148s0", "rdmap164s0"]
CORES_PER_PACKAGE = 24
PU_PER_CORE = 2
NUMA_MEMORY = 618475290624  # 576 GiB per socket


def _mask(bits):
    value = 0
    for b in bits:
        value |= 1 << b
    words = []
    while value:
        words.append(value & 0xFFFFFFFF)
        value >>= 32
    return ",".join("0x%08x" % w for w in reversed(words)) if words else "0x0"


class _Xml:
    def __init__(self):
        self.lines = []
        self.gp = 1

    def gp_index(self):
        self.gp += 1
        return self.gp

    def add(self, depth, text):
        self.lines.append("  " * depth + text)


def _sets(cpus, nodes):
    c, n = _mask(cpus), _mask(nodes)
    return f'cpuset="{c}" complete_cpuset="{c}" nodeset="{n}" complete_nodeset="{n}"'


def _pci_attrs(busid, cls, vendor, device, speed="31.507692"):
    return (f'pci_busid="{busid}" pci_type="{cls:04x} [{vendor:04x}:{device:04x}] '
            f'[{vendor:04x}:0000] 01" pci_link_speed="{speed}"')


def write_hwloc_xml(path):
    x = _Xml()
    x.add(0, '<?xml version="1.0" encoding="UTF-8"?>')
    x.add(0, '<!DOCTYPE topology SYSTEM "hwloc2.dtd">')
    x.add(0, '<topology version="2.0">')
    npus = 2 * CORES_PER_PACKAGE * PU_PER_CORE
    allcpus = range(npus)
    m = _mask(allcpus)
    x.add(1, f'<object type="Machine" os_index="0" cpuset="{m}" complete_cpuset="{m}" allowed_cpuset="{m}" '
             f'nodeset="0x00000003" complete_nodeset="0x00000003" allowed_nodeset="0x00000003" gp_index="1">')
    x.add(2, '<info name="HostName" value="p4d-test-host"/>')
    x.add(2, '<info name="DMIProductName" value="p4d.24xlarge"/>')

    def gpu(depth, busid, index):
        x.add(depth, f'<object type="PCIDev" gp_index="{x.gp_index()}" {_pci_attrs(busid, 0x0302, 0x10DE, 0x20B0)}>')
        x.add(depth + 1, f'<object type="OSDev" gp_index="{x.gp_index()}" name="cuda{index}" subtype="CUDA" osdev_type="5"/>')
        x.add(depth, '</object>')

    def nic(depth, busid, name):
        x.add(depth, f'<object type="PCIDev" gp_index="{x.gp_index()}" {_pci_attrs(busid, 0x0200, 0x1D0F, 0xEFA0)}>')
        x.add(depth + 1, f'<object type="OSDev" gp_index="{x.gp_index()}" name="{name}" osdev_type="3"/>')
        x.add(depth, '</object>')

    def bridge_open(depth, busid, secondary, subordinate, level):
        bus_range = f"0000:[{secondary:02x}-{subordinate:02x}]"
        x.add(depth, f'<object type="Bridge" gp_index="{x.gp_index()}" bridge_type="1-1" depth="{level}" '
                     f'bridge_pci="{bus_range}" {_pci_attrs(busid, 0x0604, 0x1000, 0xC010, "15.753846")}>')

    def host_bridge_open(depth, first, last):
        x.add(depth, f'<object type="Bridge" gp_index="{x.gp_index()}" bridge_type="0-1" depth="0" '
                     f'bridge_pci="0000:[{first:02x}-{last:02x}]">')

    def close(depth):
        x.add(depth, '</object>')

    # A switch: upstream port on bus `up`, downstream ports on bus up+1,
    # each port's secondary bus holding one endpoint.
    def switch(depth, up, level, endpoints):
        bridge_open(depth, f"0000:{up:02x}:00.0", up + 1, up + len(endpoints) + 3, level)
        for i, ep in enumerate(endpoints):
            bus = ep[1]
            bridge_open(depth + 1, f"0000:{up + 1:02x}:{i:02x}.0", bus, ep[2] if len(ep) > 2 else bus, level + 1)
            ep[0](depth + 2)
            close(depth + 1)
        close(depth)

    for pkg in range(2):
        cpus = [c for c in allcpus if c // (CORES_PER_PACKAGE * PU_PER_CORE) == pkg]
        x.add(2, f'<object type="Package" os_index="{pkg}" {_sets(cpus, [pkg])} gp_index="{x.gp_index()}">')
        x.add(3, '<info name="CPUModel" value="Intel(R) Xeon(R) Platinum 8275CL CPU @ 3.00GHz"/>')
        x.add(3, f'<object type="NUMANode" os_index="{pkg}" {_sets(cpus, [pkg])} gp_index="{x.gp_index()}" '
                 f'local_memory="{NUMA_MEMORY}"/>')
        x.add(3, f'<object type="L3Cache" {_sets(cpus, [pkg])} gp_index="{x.gp_index()}" cache_size="37748736" '
                 'depth="3" cache_linesize="64" cache_associativity="11" cache_type="0">')
        for core in range(CORES_PER_PACKAGE):
            pus = [cpus[core * PU_PER_CORE + k] for k in range(PU_PER_CORE)]
            x.add(4, f'<object type="L2Cache" {_sets(pus, [pkg])} gp_index="{x.gp_index()}" cache_size="1048576" '
                     'depth="2" cache_linesize="64" cache_associativity="16" cache_type="0">')
            x.add(5, f'<object type="L1Cache" {_sets(pus, [pkg])} gp_index="{x.gp_index()}" cache_size="32768" '
                     'depth="1" cache_linesize="64" cache_associativity="8" cache_type="1">')
            x.add(6, f'<object type="Core" os_index="{pkg * CORES_PER_PACKAGE + core}" {_sets(pus, [pkg])} '
                     f'gp_index="{x.gp_index()}">')
            for pu in pus:
                x.add(7, f'<object type="PU" os_index="{pu}" {_sets([pu], [pkg])} gp_index="{x.gp_index()}"/>')
            x.add(6, '</object>')
            x.add(5, '</object>')
            x.add(4, '</object>')
        x.add(3, '</object>')
        if pkg == 0:
            host_bridge_open(3, 0x10, 0x1F)
            switch(4, 0x10, 1, [(lambda d: gpu(d, GPU_BUSIDS[0], 0), 0x12),
                                (lambda d: gpu(d, GPU_BUSIDS[1], 1), 0x13),
                                (lambda d: nic(d, NIC_BUSIDS[0], NIC_NAMES[0]), 0x14)])
            close(3)
            host_bridge_open(3, 0x20, 0x2F)
            switch(4, 0x20, 1, [(lambda d: gpu(d, GPU_BUSIDS[2], 2), 0x22),
                                (lambda d: nic(d, NIC_BUSIDS[1], NIC_NAMES[1]), 0x23),
                                (lambda d: switch(d, 0x24, 3, [(lambda e: gpu(e, GPU_BUSIDS[3], 3), 0x26)]), 0x24, 0x26)])
            close(3)
        else:
            host_bridge_open(3, 0x90, 0xAF)
            switch(4, 0x90, 1, [(lambda d: gpu(d, GPU_BUSIDS[4], 4), 0x92),
                                (lambda d: gpu(d, GPU_BUSIDS[5], 5), 0x93),
                                (lambda d: nic(d, NIC_BUSIDS[2], NIC_NAMES[2]), 0x94)])
            switch(4, 0xA0, 1, [(lambda d: gpu(d, GPU_BUSIDS[6], 6), 0xA2),
                                (lambda d: gpu(d, GPU_BUSIDS[7], 7), 0xA3),
                                (lambda d: nic(d, NIC_BUSIDS[3], NIC_NAMES[3]), 0xA4)])
            close(3)
        x.add(2, '</object>')
    x.add(1, '</object>')
    x.add(0, '</topology>')
    with open(path, "w") as f:
        f.write("\n".join(x.lines) + "\n")


# NCCL_TOPO_DUMP_FILE style: <gpu> and <nic><net> children, NVLinks to six
# NVSwitches (two links each, 12 per GPU, as on p4d), one <cpu> per socket.
NVSWITCHES = ["0000:c3:00.0", "0000:c4:00.0", "0000:c5:00.0", "0000:c6:00.0", "0000:c7:00.0", "0000:c8:00.0"]


def write_nccl_dump_xml(path):
    def gpu(busid, dev, indent):
        links = "".join(f'{indent}    <nvlink target="{s}" count="2" tclass="0x068000"/>\n' for s in NVSWITCHES)
        return (f'{indent}<pci busid="{busid}" class="0x030200" vendor="0x10de" device="0x20b0" subsystem_vendor="0x10de" '
                f'subsystem_device="0x134f" link_speed="16.0 GT/s PCIe" link_width="16">\n'
                f'{indent}  <gpu dev="{dev}" sm="80" rank="{dev}" gdr="1">\n{links}{indent}  </gpu>\n{indent}</pci>\n')

    def nic(busid, name, dev, indent):
        return (f'{indent}<pci busid="{busid}" class="0x020000" vendor="0x1d0f" device="0xefa0" subsystem_vendor="0x1d0f" '
                f'subsystem_device="0xefa0" link_speed="8.0 GT/s PCIe" link_width="16">\n'
                f'{indent}  <nic>\n{indent}    <net name="{name}" dev="{dev}" speed="100000" port="1" latency="0.000000" '
                f'guid="0x{dev:x}" maxconn="131072" gdr="1"/>\n{indent}  </nic>\n{indent}</pci>\n')

    def switch(busid, body, indent="    "):
        return (f'{indent}<pci busid="{busid}" class="0x060400" vendor="0x1000" device="0xc010" link_speed="16.0 GT/s PCIe" '
                f'link_width="16">\n{body}{indent}</pci>\n')

    i = "      "
    text = '<!-- NCCL topology of a p4d-like host, as NCCL_TOPO_DUMP_FILE writes it -->\n<system version="1">\n'
    text += ('  <cpu numaid="0" affinity="00000000,0000ffff,ffffffff" arch="x86_64" vendor="GenuineIntel" familyid="6" modelid="85">\n')
    text += switch("0000:10:00.0", gpu(GPU_BUSIDS[0], 0, i) + gpu(GPU_BUSIDS[1], 1, i) + nic(NIC_BUSIDS[0], NIC_NAMES[0], 0, i))
    text += switch("0000:20:00.0", gpu(GPU_BUSIDS[2], 2, i) + gpu(GPU_BUSIDS[3], 3, i) + nic(NIC_BUSIDS[1], NIC_NAMES[1], 1, i))
    text += '  </cpu>\n'
    text += ('  <cpu numaid="1" affinity="ffffffff,ffff0000,00000000" arch="x86_64" vendor="GenuineIntel" familyid="6" modelid="85">\n')
    text += switch("0000:90:00.0", gpu(GPU_BUSIDS[4], 4, i) + gpu(GPU_BUSIDS[5], 5, i) + nic(NIC_BUSIDS[2], NIC_NAMES[2], 2, i))
    text += switch("0000:a0:00.0", gpu(GPU_BUSIDS[6], 6, i) + gpu(GPU_BUSIDS[7], 7, i) + nic(NIC_BUSIDS[3], NIC_NAMES[3], 3, i))
    text += '  </cpu>\n</system>\n'
    with open(path, "w") as f:
        f.write(text)


# AWS's static style (aws-ofi-nccl's p4d topology): bare <pci> endpoints
# identified by class code under fake switch bus ids, no <gpu>/<nic> children.
def write_nccl_aws_xml(path):
    lines = ['<system version="1">']
    for numa, groups in ((0, (("ffff:ff:01.0", 0x10), ("ffff:ff:02.0", 0x20))), (1, (("ffff:ff:03.0", 0x90), ("ffff:ff:04.0", 0xA0)))):
        lines.append(f'  <cpu numaid="{numa}" affinity="{"0000ffff,ffffffff" if numa == 0 else "ffffffff,ffff0000,00000000"}" arch="x86_64">')
        for sw, bus in groups:
            lines.append(f'    <pci busid="{sw}" class="0x060400" link_speed="8 GT/s" link_width="16">  <!-- switch -->')
            lines.append(f'      <pci busid="0000:{bus:02x}:1c.0" class="0x030200" link_speed="8 GT/s" link_width="16"/>')
            lines.append(f'      <pci busid="0000:{bus:02x}:1d.0" class="0x030200" link_speed="8 GT/s" link_width="16"/>')
            lines.append(f'      <pci busid="0000:{bus:02x}:1b.0" class="0x020000" link_speed="8 GT/s" link_width="16"/>')
            lines.append('    </pci>')
        lines.append('  </cpu>')
    lines.append('</system>')
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


def _write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)


EFA_BUSIDS = ["0000:10:1b.0", "0000:20:1b.0", "0000:90:1b.0", "0000:a0:1b.0"]
EFA_NAMES = ["rdmap16s27", "rdmap32s27", "rdmap144s27", "rdmap160s27"]
COUNTERS = {"tx_bytes": 1000000, "rx_bytes": 2000000, "tx_pkts": 1000, "rx_pkts": 2000,
            "rdma_read_bytes": 4096, "send_bytes": 777, "lifespan": 12}


def counter_value(device_index, name):
    return COUNTERS[name] * (device_index + 1)


def write_sysfs(root, efa=4, down=(), with_ena=True, proc=None):
    """A fake /sys (and /proc when `proc` is a dict) under `root`."""
    for i in range(efa):
        busid, name = EFA_BUSIDS[i], EFA_NAMES[i]
        pci = os.path.join(root, "sys/bus/pci/devices", busid)
        _write(os.path.join(pci, "vendor"), "0x1d0f\n")
        _write(os.path.join(pci, "device"), "0xefa0\n")
        _write(os.path.join(pci, "class"), "0x020000\n")
        _write(os.path.join(pci, "numa_node"), f"{0 if i < 2 else 1}\n")
        dev = os.path.join(root, "sys/class/infiniband", name)
        os.makedirs(dev, exist_ok=True)
        os.symlink(f"../../../bus/pci/devices/{busid}", os.path.join(dev, "device"))
        state = "1: DOWN" if i in down else "4: ACTIVE"
        _write(os.path.join(dev, "ports/1/state"), state + "\n")
        for counter in COUNTERS:
            _write(os.path.join(dev, "ports/1/hw_counters", counter), f"{counter_value(i, counter)}\n")
    if with_ena:
        busid = "0000:00:05.0"
        pci = os.path.join(root, "sys/bus/pci/devices", busid)
        _write(os.path.join(pci, "vendor"), "0x1d0f\n")
        _write(os.path.join(pci, "device"), "0xec20\n")
        _write(os.path.join(pci, "class"), "0x020000\n")
        _write(os.path.join(pci, "numa_node"), "0\n")
        net = os.path.join(root, "sys/class/net/ens5")
        os.makedirs(net, exist_ok=True)
        os.symlink(f"../../../bus/pci/devices/{busid}", os.path.join(net, "device"))
        _write(os.path.join(net, "operstate"), "up\n")
        _write(os.path.join(root, "sys/class/net/lo/operstate"), "unknown\n")
    if proc is not None:
        write_proc(root, **proc)


def write_proc(root, user=1000, system=500, idle=8500, iowait=0, mem_total_kb=16777216, mem_available_kb=4194304):
    _write(os.path.join(root, "proc/stat.tmp"),
           f"cpu  {user} 0 {system} {idle} {iowait} 0 0 0 0 0\ncpu0 {user} 0 {system} {idle} {iowait} 0 0 0 0 0\n")
    os.replace(os.path.join(root, "proc/stat.tmp"), os.path.join(root, "proc/stat"))
    _write(os.path.join(root, "proc/meminfo"),
           f"MemTotal:       {mem_total_kb} kB\nMemFree:         1024 kB\nMemAvailable:   {mem_available_kb} kB\n")


def set_counter(root, device_index, name, value):
    path = os.path.join(root, "sys/class/infiniband", EFA_NAMES[device_index], "ports/1/hw_counters", name)
    _write(path + ".tmp", f"{value}\n")
    os.replace(path + ".tmp", path)


def write_profile(path, checks, name="test"):
    """checks: {check: {param: value}} written as YAML flow mappings."""
    lines = [f"name: {name}", "checks:"]
    for check, params in checks.items():
        items = ", ".join(f"{k}: {v}" for k, v in params.items())
        lines.append(f"  {check}: {{{items}}}")
    _write(path, "\n".join(lines) + "\n")
