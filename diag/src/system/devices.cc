#include "system/devices.h"

#include "shared/text.h"

namespace smddp::diag {

std::optional<PciAttributes> read_pci_device(const SystemRoot& root, const std::string& busid) {
  const std::string dir = root.path("/sys/bus/pci/devices/" + busid);
  auto vendor = read_line(dir + "/vendor");
  if (!vendor) return std::nullopt;
  PciAttributes p;
  p.busid = normalize_busid(busid).value_or(busid);
  p.vendor = static_cast<uint16_t>(parse_hex(*vendor).value_or(0));
  if (auto d = read_line(dir + "/device")) p.device = static_cast<uint16_t>(parse_hex(*d).value_or(0));
  if (auto c = read_line(dir + "/class")) p.class_id = static_cast<uint32_t>(parse_hex(*c).value_or(0));
  if (auto n = read_line(dir + "/numa_node")) p.numa = static_cast<int>(parse_int(*n).value_or(-1));
  return p;
}

std::string nic_kind(uint16_t vendor, uint16_t device, uint32_t class_id) {
  if (vendor == kAmazonVendor && (device & 0xfff0) == 0xefa0) return "efa";
  if (vendor == kAmazonVendor && (device == 0xec20 || device == 0xec21 || device == 0x0ec2 || device == 0x1ec2)) {
    return "ena";
  }
  if ((class_id >> 8) == 0x0207) return "infiniband";
  if ((class_id >> 8) == 0x0200) return "ethernet";
  return "network";
}

namespace {

std::vector<std::pair<std::string, uint64_t>> read_counters(const std::string& dir) {
  std::vector<std::pair<std::string, uint64_t>> out;
  for (const auto& name : list_dir(dir)) {
    if (name == "lifespan") continue;  // EFA: the counter cache lifetime, not a counter
    auto text = read_line(dir + "/" + name);
    if (!text) continue;
    auto v = parse_int(*text);
    if (!v || *v < 0) continue;
    out.emplace_back(name, static_cast<uint64_t>(*v));
  }
  return out;
}

}  // namespace

std::vector<RdmaDevice> discover_rdma(const SystemRoot& root, bool with_counters) {
  std::vector<RdmaDevice> out;
  const std::string base = root.path("/sys/class/infiniband");
  for (const auto& name : list_dir(base)) {
    RdmaDevice d;
    d.name = name;
    const std::string dir = base + "/" + name;
    if (auto busid = link_target_name(dir + "/device")) d.pci = read_pci_device(root, *busid);
    if (!d.pci) {
      // Without the PCI tree, the device's own attributes still name the vendor.
      if (auto vendor = read_line(dir + "/device/vendor")) {
        d.pci = PciAttributes{};
        d.pci->busid = link_target_name(dir + "/device").value_or("");
        d.pci->vendor = static_cast<uint16_t>(parse_hex(*vendor).value_or(0));
      }
    }
    d.efa = d.pci && d.pci->vendor == kAmazonVendor;
    if (with_counters) {
      auto device_counters = read_counters(dir + "/hw_counters");
      if (!device_counters.empty()) d.ports.push_back(RdmaPort{0, "", std::move(device_counters)});
    }
    for (const auto& port : list_dir(dir + "/ports")) {
      auto number = parse_int(port);
      if (!number) continue;
      RdmaPort p;
      p.port = static_cast<int>(*number);
      // "4: ACTIVE" -> "ACTIVE"
      if (auto state = read_line(dir + "/ports/" + port + "/state")) {
        auto colon = state->find(':');
        p.state = trim(colon == std::string::npos ? *state : state->substr(colon + 1));
      }
      if (with_counters) p.counters = read_counters(dir + "/ports/" + port + "/hw_counters");
      d.ports.push_back(std::move(p));
    }
    out.push_back(std::move(d));
  }
  return out;
}

std::vector<NetDevice> discover_net(const SystemRoot& root) {
  std::vector<NetDevice> out;
  const std::string base = root.path("/sys/class/net");
  for (const auto& name : list_dir(base)) {
    NetDevice n;
    n.name = name;
    const std::string dir = base + "/" + name;
    if (auto busid = link_target_name(dir + "/device"); busid && normalize_busid(*busid)) {
      n.pci = read_pci_device(root, *busid);
    }
    n.kind = n.pci ? nic_kind(n.pci->vendor, n.pci->device, n.pci->class_id) : "virtual";
    n.operstate = read_line(dir + "/operstate").value_or("");
    out.push_back(std::move(n));
  }
  return out;
}

}  // namespace smddp::diag
