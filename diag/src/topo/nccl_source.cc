// NCCL topology XML -> Topology. Reads both what NCCL_TOPO_DUMP_FILE writes
// (<gpu> and <nic><net> under <pci>, <nvlink> links) and the static files AWS
// publishes for p4d/p5 (bare <pci> elements identified by class code).
//
//   <system version="1">
//     <cpu numaid="0" affinity="00ffffff" ...>          one NUMA node
//       <pci busid="ffff:ff:01.0" class="0x060400">   a PCIe switch
//         <pci busid="0000:10:1c.0" class="0x030200"> a GPU
//           <gpu dev="0" sm="80"><nvlink target="0000:c3:00.0" count="2" tclass="0x068000"/></gpu>
//         </pci>
//         <pci busid="0000:10:1b.0" class="0x020000"><nic><net name="rdmap16s27" dev="0" speed="100000"/></nic></pci>
//
// An EFA device is named rdmap* by its kernel driver; <net speed> is in Mb/s.
// AWS's g5.48xlarge file lists bare <pci busid> entries, without class or ids:
// those are identified by vendor/device when given, else counted in a warning.
// A bus id or NUMA id given twice is refused with both lines.
#include <cerrno>
#include <cstring>
#include <fmt/format.h>
#include <map>
#include <set>

#include "shared/files.h"
#include "shared/text.h"
#include "shared/xml.h"
#include "smddp/error.h"
#include "smddp/tools/input_file.h"
#include "system/devices.h"
#include "topo/sources.h"

namespace smddp::diag {
namespace {

constexpr uint32_t kNvSwitchClass = 0x068000;

class NcclReader {
 public:
  explicit NcclReader(std::string path) : path_(std::move(path)) {}

  Topology read(const XmlElement& root) {
    if (root.name != "system") {
      fail(root, "root element is <" + root.name + ">, an NCCL topology starts with <system>");
    }
    topo_.source = "NCCL XML " + path_;
    int next_numa = 0;
    std::map<int, int> numa_lines;
    for (const auto& cpu : root.children) {
      if (cpu.name != "cpu") continue;
      NumaNode node;
      node.os_index = static_cast<int>(integer(cpu, "numaid", next_numa));
      next_numa = node.os_index + 1;
      if (auto [it, fresh] = numa_lines.emplace(node.os_index, cpu.line); !fresh) {
        fail(cpu, fmt::format("<cpu numaid=\"{}\"> repeats the NUMA node of line {}", node.os_index, it->second));
      }
      node.package = node.os_index;
      if (const std::string* mask = cpu.attribute("affinity")) {
        auto cpus = cpu_mask_to_list(*mask);
        if (!cpus) fail(cpu, "affinity '" + *mask + "' is not a CPU mask");
        node.cpus = *cpus;
      }
      topo_.numa.push_back(node);
      const std::string host_bridge = "cpu" + std::to_string(node.os_index);
      for (const auto& child : cpu.children) walk(child, node.os_index, host_bridge, {});
    }
    if (topo_.numa.empty()) fail(root, "no <cpu> element");
    topo_.numa_nodes = static_cast<int>(topo_.numa.size());
    topo_.packages = topo_.numa_nodes;
    topo_.notes.push_back("NCCL XML has one <cpu> per NUMA node and no core or cache details; "
                          "PCIe switches appear as single bridges, so NODE does not occur");
    if (!unidentified_.empty()) {
      topo_.warnings.push_back(fmt::format(
          "{} of {} PCI devices could not be identified: no class and no vendor/device ids (line{} {}); "
          "NCCL looks such devices up in sysfs on the instance itself",
          unidentified_.size(), topo_.devices.size(), unidentified_.size() == 1 ? "" : "s", join(unidentified_, ", ")));
    }
    for (auto& d : topo_.devices) {
      if (d.kind != DeviceKind::Gpu) continue;
      for (const auto& [target, n] : d.nvlinks) {
        if (switches_.count(target)) d.nvlink_to_switch = true;
      }
    }
    return topo_;
  }

 private:
  [[noreturn]] void fail(const XmlElement& e, const std::string& what) const {
    throw UsageError(fmt::format("--nccl-topo '{}': line {}: {}", path_, e.line, what));
  }

  int64_t integer(const XmlElement& e, const char* key, int64_t fallback) const {
    const std::string* text = e.attribute(key);
    if (!text) return fallback;
    auto v = parse_int(*text);
    if (!v) fail(e, fmt::format("<{} {}=\"{}\"> is not an integer", e.name, key, *text));
    return *v;
  }

  uint32_t class_code(const XmlElement& e) const {
    const std::string* text = e.attribute("class");
    if (!text) return 0;
    auto v = parse_hex(*text);
    if (!v || *v > 0xffffff) fail(e, "<pci class=\"" + *text + "\"> is not a PCI class code");
    return static_cast<uint32_t>(*v);
  }

  std::string busid(const XmlElement& e) {
    const std::string* text = e.attribute("busid");
    if (!text) fail(e, "<" + e.name + "> has no busid");
    auto id = normalize_busid(*text);
    if (!id) fail(e, "busid '" + *text + "' is not a PCI bus id");
    if (auto [it, fresh] = busid_lines_.emplace(*id, e.line); !fresh) {
      fail(e, fmt::format("busid '{}' repeats the device of line {}", *text, it->second));
    }
    return *id;
  }

  void read_nic(const XmlElement& nic, Device& d) {
    d.kind = DeviceKind::Nic;
    std::vector<std::string> names;
    for (const auto& net : nic.children) {
      if (net.name != "net") continue;
      if (const std::string* name = net.attribute("name")) names.push_back(*name);
      integer(net, "dev", 0);
      const int64_t speed = integer(net, "speed", -1);
      if (speed > 0 && d.speed_mbps < 0) d.speed_mbps = speed;
    }
    if (!names.empty()) d.name = join(names, ",");
    // The EFA kernel driver names its devices rdmap<bus>s<slot>.
    for (const auto& n : names) {
      if (n.starts_with("rdmap") || n.starts_with("efa")) d.nic_kind = "efa";
    }
  }

  void walk(const XmlElement& e, int numa, const std::string& host_bridge, std::vector<std::string> bridges) {
    if (e.name == "nic") {  // a NIC NCCL attaches straight to the CPU
      Device d;
      d.numa = numa;
      d.host_bridge = host_bridge;
      read_nic(e, d);
      if (d.nic_kind.empty()) d.nic_kind = "network";
      topo_.devices.push_back(std::move(d));
      return;
    }
    if (e.name != "pci") return;
    std::string id = busid(e);
    uint32_t cls = class_code(e);
    bool has_pci_children = false;
    for (const auto& c : e.children) has_pci_children |= c.name == "pci";
    if ((cls >> 8) == 0x0604 || (cls == 0 && has_pci_children)) {
      ++topo_.bridges;
      bridges.insert(bridges.begin(), id);
      for (const auto& c : e.children) walk(c, numa, host_bridge, bridges);
      return;
    }
    Device d;
    d.busid = id;
    d.class_id = cls;
    d.numa = numa;
    d.host_bridge = host_bridge;
    d.bridges = bridges;
    if (const std::string* v = e.attribute("vendor")) d.vendor = static_cast<uint16_t>(parse_hex(*v).value_or(0));
    if (const std::string* v = e.attribute("device")) d.device = static_cast<uint16_t>(parse_hex(*v).value_or(0));
    integer(e, "link_width", 0);
    if (cls == kNvSwitchClass) switches_.insert(id);
    if ((cls >> 8) == 0x0302 || (cls >> 8) == 0x0300) d.kind = DeviceKind::Gpu;
    if ((cls >> 16) == 0x02) d.kind = DeviceKind::Nic;
    for (const auto& c : e.children) {
      if (c.name == "gpu") {
        d.kind = DeviceKind::Gpu;
        d.gpu_index = static_cast<int>(integer(c, "dev", -1));
        const int64_t sm = integer(c, "sm", -1);
        if (sm > 0) d.sm = static_cast<int>(sm);
        for (const auto& link : c.children) {
          if (link.name != "nvlink") continue;
          const std::string* target = link.attribute("target");
          if (!target) fail(link, "<nvlink> has no target");
          auto t = normalize_busid(*target);
          if (!t) fail(link, "nvlink target '" + *target + "' is not a PCI bus id");
          d.nvlinks[*t] += static_cast<int>(integer(link, "count", 1));
          if (const std::string* tc = link.attribute("tclass"); tc && parse_hex(*tc).value_or(0) == kNvSwitchClass) {
            switches_.insert(*t);
          }
        }
      } else if (c.name == "nic") {
        read_nic(c, d);
      } else if (c.name == "pci") {
        // An endpoint with PCI children is a bridge NCCL did not class: walk it too.
        walk(c, numa, host_bridge, bridges);
      }
    }
    if (cls == 0 && d.kind == DeviceKind::Other) {
      // No class: the vendor and device ids, when the file has them, still tell.
      if (d.vendor == kNvidiaVendor) {
        d.kind = DeviceKind::Gpu;
      } else if (d.vendor == kAmazonVendor) {
        d.nic_kind = nic_kind(d.vendor, d.device, cls);
        if (d.nic_kind == "efa" || d.nic_kind == "ena") d.kind = DeviceKind::Nic;
      }
      if (d.kind == DeviceKind::Other) unidentified_.push_back(std::to_string(e.line));
    }
    if (d.kind == DeviceKind::Nic && (d.nic_kind.empty() || d.nic_kind == "network")) {
      d.nic_kind = d.vendor ? nic_kind(d.vendor, d.device, cls) : ((cls >> 8) == 0x0207 ? "infiniband" : "network");
    }
    topo_.devices.push_back(std::move(d));
  }

  std::string path_;
  Topology topo_;
  std::set<std::string> switches_;
  std::map<std::string, int> busid_lines_;  // bus id -> line
  std::vector<std::string> unidentified_;   // lines of devices without class or ids
};

}  // namespace

Topology load_nccl_xml(const std::string& path) {
  const std::string text = tools::read_input_file(path, "--nccl-topo '" + path + "'");
  XmlElement root;
  try {
    root = parse_xml(text);
  } catch (const UsageError& e) {
    throw UsageError("--nccl-topo '" + path + "': " + e.what());
  }
  return NcclReader(path).read(root);
}

}  // namespace smddp::diag
