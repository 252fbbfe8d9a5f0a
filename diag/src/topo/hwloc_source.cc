// hwloc -> Topology, for the live host and for saved hwloc XML files.
#include <hwloc.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <iterator>
#include <memory>
#include <regex>
#include <set>

#include "shared/text.h"
#include "shared/xml.h"
#include "smddp/error.h"
#include "smddp/tools/input_file.h"
#include "system/cuda_probe.h"
#include "system/devices.h"
#include "system/nvml.h"
#include "topo/sources.h"

namespace smddp::diag {
namespace {

struct TopologyDeleter {
  void operator()(hwloc_topology_t t) const { hwloc_topology_destroy(t); }
};
using HwlocTopology = std::unique_ptr<std::remove_pointer_t<hwloc_topology_t>, TopologyDeleter>;

std::string bitmap_list(hwloc_const_bitmap_t set) {
  char* text = nullptr;
  if (!set || hwloc_bitmap_list_asprintf(&text, set) < 0 || !text) return "";
  std::string s(text);
  std::free(text);
  return s;
}

bool is_gpu(uint32_t class24, uint16_t vendor) {
  uint32_t cls = class24 >> 8;
  return cls == 0x0302 || (cls == 0x0300 && vendor == kNvidiaVendor);
}

Device make_device(hwloc_topology_t t, hwloc_obj_t obj) {
  const auto& pci = obj->attr->pcidev;
  Device d;
  d.busid = fmt::format("{:04x}:{:02x}:{:02x}.{:x}", pci.domain, pci.bus, pci.dev, pci.func);
  d.class_id = static_cast<uint32_t>(pci.class_id) << 8;
  d.vendor = pci.vendor_id;
  d.device = pci.device_id;
  if (const char* model = hwloc_obj_get_info_by_name(obj, "PCIDevice")) d.model = model;
  if (is_gpu(d.class_id, d.vendor)) {
    d.kind = DeviceKind::Gpu;
  } else if ((d.class_id >> 16) == 0x02) {
    d.kind = DeviceKind::Nic;
    d.nic_kind = nic_kind(d.vendor, d.device, d.class_id);
  }
  std::vector<std::string> names;
  for (hwloc_obj_t c = obj->io_first_child; c; c = c->next_sibling) {
    if (c->type == HWLOC_OBJ_OS_DEVICE && c->name) names.emplace_back(c->name);
  }
  d.name = join(names, ",");
  // The EFA driver's OpenFabrics device (rdmap*, efa_*) marks an EFA NIC even
  // where the PCI ids do not (a virtual function, an edited XML).
  for (const auto& n : names) {
    if (n.starts_with("rdmap") || n.starts_with("efa")) {
      d.kind = DeviceKind::Nic;
      d.nic_kind = "efa";
    }
  }
  for (hwloc_obj_t p = obj->parent; p && p->type == HWLOC_OBJ_BRIDGE; p = p->parent) {
    std::string id = "bridge" + std::to_string(p->gp_index);
    if (p->attr->bridge.upstream_type == HWLOC_OBJ_BRIDGE_HOST) {
      d.host_bridge = id;
      break;
    }
    d.bridges.push_back(id);
  }
  hwloc_obj_t anchor = hwloc_get_non_io_ancestor_obj(t, obj);
  if (anchor && anchor->nodeset && hwloc_bitmap_weight(anchor->nodeset) == 1) {
    d.numa = hwloc_bitmap_first(anchor->nodeset);
  }
  return d;
}

Topology from_hwloc(hwloc_topology_t t) {
  Topology topo;
  hwloc_obj_t root = hwloc_get_root_obj(t);
  if (const char* host = hwloc_obj_get_info_by_name(root, "HostName")) topo.hostname = host;
  topo.packages = hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_PACKAGE);
  topo.numa_nodes = hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_NUMANODE);
  topo.cores = hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_CORE);
  topo.pus = hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_PU);
  topo.memory_bytes = root->total_memory;
  for (int i = 0; i < topo.numa_nodes; ++i) {
    hwloc_obj_t n = hwloc_get_obj_by_type(t, HWLOC_OBJ_NUMANODE, static_cast<unsigned>(i));
    NumaNode node;
    node.os_index = static_cast<int>(n->os_index);
    node.memory_bytes = n->attr->numanode.local_memory;
    node.cpus = bitmap_list(n->cpuset);
    if (hwloc_obj_t pkg = hwloc_get_ancestor_obj_by_type(t, HWLOC_OBJ_PACKAGE, n)) {
      node.package = static_cast<int>(pkg->os_index);
    }
    topo.numa.push_back(node);
  }
  const std::pair<hwloc_obj_type_t, const char*> cache_types[] = {
      {HWLOC_OBJ_L1CACHE, "L1d"}, {HWLOC_OBJ_L1ICACHE, "L1i"}, {HWLOC_OBJ_L2CACHE, "L2"},
      {HWLOC_OBJ_L3CACHE, "L3"},  {HWLOC_OBJ_L4CACHE, "L4"},
  };
  for (const auto& [type, name] : cache_types) {
    int n = hwloc_get_nbobjs_by_type(t, type);
    if (n <= 0) continue;
    hwloc_obj_t first = hwloc_get_obj_by_type(t, type, 0);
    topo.caches.push_back(CacheLevel{name, first->attr->cache.size, n});
  }
  for (hwloc_obj_t obj = hwloc_get_next_pcidev(t, nullptr); obj; obj = hwloc_get_next_pcidev(t, obj)) {
    topo.devices.push_back(make_device(t, obj));
  }
  for (hwloc_obj_t b = hwloc_get_next_bridge(t, nullptr); b; b = hwloc_get_next_bridge(t, b)) {
    if (b->attr->bridge.upstream_type == HWLOC_OBJ_BRIDGE_PCI) ++topo.bridges;
  }
  int index = 0;
  for (auto& d : topo.devices) {
    if (d.kind == DeviceKind::Gpu) d.gpu_index = index++;  // PCI order, as CUDA_DEVICE_ORDER=PCI_BUS_ID
  }
  return topo;
}

HwlocTopology make_topology() {
  hwloc_topology_t raw = nullptr;
  if (hwloc_topology_init(&raw) != 0) throw Error("hwloc_topology_init failed");
  HwlocTopology t(raw);
  hwloc_topology_set_io_types_filter(raw, HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
  hwloc_topology_set_icache_types_filter(raw, HWLOC_TYPE_FILTER_KEEP_ALL);
  return t;
}

// GPUs the CUDA runtime reports that neither hwloc nor NVML listed.
void merge_cuda(Topology& topo) {
  CudaProbe cuda = probe_cuda();
  if (!cuda.built_with_cuda) return;
  topo.notes.push_back(cuda.message);
  for (const auto& c : cuda.devices) {
    bool known = false;
    for (auto& d : topo.devices) {
      if (!c.busid.empty() && d.busid == c.busid) {
        known = true;
        if (d.model.empty()) d.model = c.name;
        if (!d.memory_bytes) d.memory_bytes = c.memory_bytes;
      }
    }
    if (known || c.busid.empty()) continue;
    Device d;
    d.kind = DeviceKind::Gpu;
    d.busid = c.busid;
    d.vendor = kNvidiaVendor;
    d.class_id = 0x030200;
    d.model = c.name;
    d.memory_bytes = c.memory_bytes;
    topo.devices.push_back(std::move(d));
  }
  // GPU indices in bus-id order over everything listed (hwloc's and the
  // runtime's), so a GPU only CUDA saw does not take another one's index.
  std::vector<Device*> gpus;
  for (auto& d : topo.devices) {
    if (d.kind == DeviceKind::Gpu) gpus.push_back(&d);
  }
  std::stable_sort(gpus.begin(), gpus.end(), [](const Device* a, const Device* b) { return a->busid < b->busid; });
  for (size_t i = 0; i < gpus.size(); ++i) gpus[i]->gpu_index = static_cast<int>(i);
}

void merge_nvml(Topology& topo, const std::string& library) {
  NvmlSnapshot nvml = take_nvml_snapshot(library);
  if (!nvml.available) {
    merge_cuda(topo);
    if (topo.gpus().empty()) topo.notes.push_back("no NVIDIA GPU: " + nvml.message + ", none on the PCI bus");
    else topo.notes.push_back(nvml.message + "; GPUs listed from PCI and the CUDA runtime");
    return;
  }
  topo.notes.push_back(fmt::format("{} GPU(s) from {}", nvml.gpus.size(), nvml.message));
  for (const auto& g : nvml.gpus) {
    Device* match = nullptr;
    for (auto& d : topo.devices) {
      if (!g.busid.empty() && d.busid == g.busid) match = &d;
    }
    if (!match) {
      topo.devices.push_back(Device{});
      match = &topo.devices.back();
      match->busid = g.busid;
      match->vendor = kNvidiaVendor;
      match->class_id = 0x030200;
      topo.notes.push_back("GPU " + std::to_string(g.index) + " (" + g.busid + ") is known to NVML but not to hwloc");
    }
    match->kind = DeviceKind::Gpu;
    match->gpu_index = g.index;
    if (!g.name.empty()) match->model = g.name;
    if (g.memory_total_bytes) match->memory_bytes = *g.memory_total_bytes;
    if (g.sm) match->sm = *g.sm;
  }
}

// EFA and other NICs the sysfs tree names, merged by bus id; those hwloc did
// not see (a fake tree in tests) join with their sysfs NUMA node.
void merge_sysfs(Topology& topo, const SystemRoot& root) {
  auto add_or_name = [&](const std::string& name, const std::optional<PciAttributes>& pci) {
    if (!pci || pci->busid.empty()) return;
    for (auto& d : topo.devices) {
      if (d.busid != pci->busid) continue;
      if (d.name.find(name) == std::string::npos) d.name += (d.name.empty() ? "" : ",") + name;
      return;
    }
    Device d;
    d.kind = DeviceKind::Nic;
    d.busid = pci->busid;
    d.vendor = pci->vendor;
    d.device = pci->device;
    d.class_id = pci->class_id;
    d.nic_kind = nic_kind(pci->vendor, pci->device, pci->class_id);
    d.numa = pci->numa;
    d.name = name;
    topo.devices.push_back(std::move(d));
  };
  auto rdma = discover_rdma(root, false);
  for (const auto& r : rdma) add_or_name(r.name, r.pci);
  for (const auto& n : discover_net(root)) add_or_name(n.name, n.pci);
  int efa = 0;
  for (const auto& r : rdma) efa += r.efa ? 1 : 0;
  if (efa == 0) {
    topo.notes.push_back("no EFA device (nothing with vendor 0x1d0f under " + root.path("/sys/class/infiniband") + ")");
  }
}

}  // namespace

Topology discover_host(const SystemRoot& root, const std::string& nvml_library) {
  HwlocTopology t = make_topology();
  if (hwloc_topology_load(t.get()) != 0) throw Error(std::string("hwloc discovery failed: ") + std::strerror(errno));
  Topology topo = from_hwloc(t.get());
  topo.source = "hwloc discovery";
  if (topo.hostname.empty()) topo.hostname = hostname();
  merge_nvml(topo, nvml_library);
  merge_sysfs(topo, root);
  return topo;
}

namespace {

// hwloc's own XML reader asserts (abort) on some malformed bitmaps and
// leaks on a document cut short: the file is read by our parser first, so a
// hostile file is a usage error with its line, never an abort in hwloc.
bool is_hwloc_bitmap(const std::string& v) {
  // hwloc_bitmap_sscanf's syntax: an optional "0xf...f," (infinite) prefix,
  // then comma-separated chunks of up to 8 hex digits, each "0x"-prefixed.
  static const std::regex kBitmap("(0xf\\.\\.\\.f,)?0x[0-9a-fA-F]{1,8}(,0x[0-9a-fA-F]{1,8})*|0xf\\.\\.\\.f");
  return std::regex_match(v, kBitmap);
}

void check_hwloc_document(const XmlElement& e, const std::string& path) {
  for (const auto& [key, value] : e.attributes) {
    const bool bitmap = key.size() >= 6 && (key.compare(key.size() - 6, 6, "cpuset") == 0 ||
                                            (key.size() >= 7 && key.compare(key.size() - 7, 7, "nodeset") == 0));
    if (bitmap && !is_hwloc_bitmap(value)) {
      throw UsageError(fmt::format("--hwloc-xml '{}': line {}: {}=\"{}\" is not an hwloc bitmap", path, e.line, key,
                                   value.substr(0, 64)));
    }
  }
  for (const auto& child : e.children) check_hwloc_document(child, path);
}

// hwloc's XML importer trusts what it reads past the checks above: some
// malformed files still crash it (fuzz/corpus/hwloc_xml/regression-*). A
// child process loads the file first, with the default signal actions, so
// that a crash there is this file's fault, not the tool's.
bool hwloc_loads_in_child(const std::string& path) {
  std::fflush(nullptr);
  const pid_t pid = fork();
  if (pid < 0) return true;  // no child: load it here, as before
  if (pid == 0) {
    for (int sig : {SIGSEGV, SIGBUS, SIGABRT, SIGFPE, SIGILL}) std::signal(sig, SIG_DFL);
    HwlocTopology t = make_topology();  // the same filters as the load that counts
    const bool ok = hwloc_topology_set_xml(t.get(), path.c_str()) == 0 && hwloc_topology_load(t.get()) == 0;
    _exit(ok ? 0 : 1);
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

}  // namespace

Topology load_hwloc_xml(const std::string& path) {
  const std::string text = tools::read_input_file(path, "--hwloc-xml '" + path + "'");
  try {
    check_hwloc_document(parse_xml(text), path);
  } catch (const UsageError& e) {
    const std::string what = e.what();
    if (what.rfind("--hwloc-xml", 0) == 0) throw;
    throw UsageError("--hwloc-xml '" + path + "': not a valid hwloc XML topology: " + what);
  }
  // hwloc's own XML reader, never libxml2's (which prints to stderr).
  setenv("HWLOC_LIBXML_IMPORT", "0", 1);
  if (!hwloc_loads_in_child(path)) {
    throw UsageError("--hwloc-xml '" + path + "': not a valid hwloc XML topology (hwloc cannot load it)");
  }
  HwlocTopology t = make_topology();
  if (hwloc_topology_set_xml(t.get(), path.c_str()) != 0 || hwloc_topology_load(t.get()) != 0) {
    throw UsageError("--hwloc-xml '" + path + "': not a valid hwloc XML topology");
  }
  Topology topo = from_hwloc(t.get());
  topo.source = "hwloc XML " + path;
  if (topo.pus == 0) throw UsageError("--hwloc-xml '" + path + "': the topology has no processing unit");
  // hwloc keeps what the file says; one device or NUMA node listed twice
  // would be counted twice, so it is refused like malformed XML.
  std::set<std::string> busids;
  for (const auto& d : topo.devices) {
    if (!busids.insert(d.busid).second) throw UsageError("--hwloc-xml '" + path + "': PCI bus id " + d.busid + " is listed twice");
  }
  std::set<int> numa;
  for (const auto& n : topo.numa) {
    if (!numa.insert(n.os_index).second) {
      throw UsageError(fmt::format("--hwloc-xml '{}': NUMA node {} is listed twice", path, n.os_index));
    }
  }
  return topo;
}

}  // namespace smddp::diag
