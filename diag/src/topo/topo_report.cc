#include "topo/topo_report.h"

#include <fmt/format.h>

#include <algorithm>

#include "shared/text.h"

namespace smddp::diag {
namespace {

std::string kind_name(DeviceKind k) {
  switch (k) {
    case DeviceKind::Gpu: return "gpu";
    case DeviceKind::Nic: return "nic";
    case DeviceKind::Other: break;
  }
  return "other";
}

std::string plural(int n, const char* one, const char* many) {
  return fmt::format("{} {}", n, n == 1 ? one : many);
}

const char* kLegend =
    "Legend: X = self, NV# = NVLink (# links), PIX = at most one PCIe switch, PXB = several PCIe switches,\n"
    "        PHB = a PCIe host bridge (CPU), NODE = across host bridges in one NUMA node, SYS = across NUMA nodes\n";

// Unknown values are null in JSON and "-" in text, never a made-up 0.
nlohmann::json known(int64_t v, int64_t unknown) { return v == unknown ? nlohmann::json(nullptr) : nlohmann::json(v); }
nlohmann::json hex_or_null(uint32_t v, int digits) { return v ? nlohmann::json(fmt::format("0x{:0{}x}", v, digits)) : nlohmann::json(nullptr); }
std::string text_or_dash(int64_t v, int64_t unknown) { return v == unknown ? "-" : std::to_string(v); }
std::string hex_or_dash(uint32_t v, int digits) { return v ? fmt::format("{:0{}x}", v, digits) : std::string(digits, '-'); }
nlohmann::json speed_gbps(const Device& d) {
  return d.speed_mbps > 0 ? nlohmann::json(static_cast<double>(d.speed_mbps) / 1000.0) : nlohmann::json(nullptr);
}
std::string speed_text(const Device& d) {
  return d.speed_mbps > 0 ? format_number(static_cast<double>(d.speed_mbps) / 1000.0, d.speed_mbps % 1000 ? 1 : 0) + " Gb/s" : "speed unknown";
}
std::string sm_text(const Device& d) { return d.sm > 0 ? fmt::format("sm {}", d.sm) : "sm unknown"; }

}  // namespace

nlohmann::json topology_json(const Topology& topo) {
  using nlohmann::json;
  json j;
  j["source"] = topo.source;
  j["hostname"] = topo.hostname;
  j["packages"] = topo.packages;
  j["numa_nodes"] = topo.numa_nodes;
  j["cores"] = topo.cores;
  j["pus"] = topo.pus;
  j["memory_bytes"] = topo.memory_bytes;
  j["pci_bridges"] = topo.bridges;
  j["numa"] = json::array();
  for (const auto& n : topo.numa) {
    j["numa"].push_back({{"os_index", n.os_index}, {"package", n.package}, {"memory_bytes", n.memory_bytes}, {"cpus", n.cpus}});
  }
  j["caches"] = json::array();
  for (const auto& c : topo.caches) {
    j["caches"].push_back({{"name", c.name}, {"size_bytes", c.size_bytes}, {"count", c.count}});
  }
  j["devices"] = json::array();
  for (const auto& d : topo.devices) {
    j["devices"].push_back({{"busid", d.busid.empty() ? json(nullptr) : json(d.busid)},
                            {"kind", kind_name(d.kind)},
                            {"class", hex_or_null(d.class_id, 6)},
                            {"vendor", hex_or_null(d.vendor, 4)},
                            {"device", hex_or_null(d.device, 4)},
                            {"name", d.name},
                            {"numa", known(d.numa, -1)}});
  }
  TopoMatrix m = build_matrix(topo);
  j["gpus"] = json::array();
  j["nics"] = json::array();
  for (size_t i = 0; i < m.devices.size(); ++i) {
    const Device* d = m.devices[i];
    json e = {{"label", m.labels[i]}, {"busid", d->busid.empty() ? json(nullptr) : json(d->busid)}, {"name", d->name},
              {"numa", known(d->numa, -1)}};
    if (d->kind == DeviceKind::Gpu) {
      e["model"] = d->model.empty() ? json(nullptr) : json(d->model);
      e["memory_bytes"] = known(static_cast<int64_t>(d->memory_bytes), 0);
      e["index"] = known(d->gpu_index, -1);
      e["sm"] = known(d->sm, -1);
      j["gpus"].push_back(e);
    } else {
      e["kind"] = d->nic_kind;
      e["speed_gbps"] = speed_gbps(*d);
      j["nics"].push_back(e);
    }
  }
  j["matrix"] = {{"labels", m.labels}, {"rows", m.cells}};
  j["affinity"] = json::array();
  for (const auto& a : gpu_affinity(topo, m)) {
    j["affinity"].push_back({{"gpu", a.gpu}, {"numa", known(a.numa, -1)}, {"cpus", a.cpus}, {"nics", a.nics}, {"relation", a.relation}});
  }
  j["notes"] = topo.notes;
  j["warnings"] = topo.warnings;
  return j;
}

std::string topology_text(const Topology& topo) {
  std::string out;
  auto line = [&](const std::string& s) { out += s + "\n"; };
  line(fmt::format("Topology of {} ({})", topo.hostname.empty() ? "unknown host" : topo.hostname, topo.source));
  if (topo.pus > 0) {
    line(fmt::format("Machine: {}, {}, {}, {}, {} memory", plural(topo.packages, "package", "packages"),
                     plural(topo.numa_nodes, "NUMA node", "NUMA nodes"), plural(topo.cores, "core", "cores"),
                     plural(topo.pus, "PU", "PUs"), format_bytes(topo.memory_bytes)));
  } else {
    line(fmt::format("Machine: {}", plural(topo.numa_nodes, "NUMA node", "NUMA nodes")));
  }
  if (!topo.caches.empty()) {
    std::vector<std::string> parts;
    for (const auto& c : topo.caches) parts.push_back(fmt::format("{} {} x{}", c.name, format_bytes(c.size_bytes), c.count));
    line("Caches: " + join(parts, ", "));
  }
  for (const auto& n : topo.numa) {
    std::string mem = n.memory_bytes ? format_bytes(n.memory_bytes) + ", " : "";
    line(fmt::format("NUMA node {}{}: {}CPUs {}", n.os_index, n.package >= 0 ? fmt::format(" (package {})", n.package) : "",
                     mem, n.cpus.empty() ? "unknown" : n.cpus));
  }
  line(fmt::format("PCI: {}, {}", plural(static_cast<int>(topo.devices.size()), "device", "devices"),
                   plural(topo.bridges, "bridge", "bridges")));
  for (const auto& d : topo.devices) {
    line(fmt::format("  {:<13} {:<5} class {:<8}  {}:{}  NUMA {:>2}  {}", d.busid.empty() ? "-" : d.busid, kind_name(d.kind),
                     d.class_id ? fmt::format("0x{:06x}", d.class_id) : "-", hex_or_dash(d.vendor, 4), hex_or_dash(d.device, 4),
                     text_or_dash(d.numa, -1), d.name));
  }
  TopoMatrix m = build_matrix(topo);
  auto gpus = topo.gpus();
  auto nics = topo.nics();
  if (gpus.empty()) {
    line("GPUs: none");
  } else {
    line(fmt::format("GPUs: {}", gpus.size()));
  }
  if (nics.empty()) line("NICs: none");
  else line(fmt::format("NICs: {}", nics.size()));
  for (size_t i = 0; i < m.devices.size(); ++i) {
    const Device* d = m.devices[i];
    std::string what = d->kind == DeviceKind::Gpu
                           ? (d->model.empty() ? "GPU" : d->model) + (d->memory_bytes ? " " + format_bytes(d->memory_bytes) : "") +
                                 ", " + sm_text(*d)
                           : d->nic_kind + ", " + speed_text(*d);
    line(fmt::format("  {:<5} {:<13} NUMA {:>2}  {}{}", m.labels[i], d->busid.empty() ? "-" : d->busid, text_or_dash(d->numa, -1),
                     what, d->name.empty() ? "" : "  " + d->name));
  }
  if (!m.devices.empty()) {
    line("");
    size_t w = 6;
    for (const auto& row : m.cells) {
      for (const auto& c : row) w = std::max(w, c.size() + 2);
    }
    std::string header = fmt::format("{:<6}", "");
    for (const auto& l : m.labels) header += fmt::format("{:>{}}", l, w);
    header += "  CPU Affinity   NUMA Affinity";
    line(header);
    for (size_t i = 0; i < m.devices.size(); ++i) {
      std::string row = fmt::format("{:<6}", m.labels[i]);
      for (const auto& c : m.cells[i]) row += fmt::format("{:>{}}", c, w);
      const Device* d = m.devices[i];
      std::string cpus = "-";
      for (const auto& n : topo.numa) {
        if (n.os_index == d->numa && !n.cpus.empty()) cpus = n.cpus;
      }
      row += fmt::format("  {:<14} {}", cpus, d->numa >= 0 ? std::to_string(d->numa) : "N/A");
      line(row);
    }
    out += "\n";
    out += kLegend;
  }
  auto affinity = gpu_affinity(topo, m);
  if (!affinity.empty() && !nics.empty()) {
    line("");
    line("GPU affinity:");
    for (const auto& a : affinity) {
      line(fmt::format("  {}: NUMA {}, CPUs {}, nearest NIC {} ({})", a.gpu, text_or_dash(a.numa, -1), a.cpus.empty() ? "-" : a.cpus,
                       join(a.nics, ", "), a.relation));
    }
  }
  if (!topo.notes.empty() || !topo.warnings.empty()) {
    line("");
    for (const auto& n : topo.notes) line("Note: " + n);
    for (const auto& w : topo.warnings) line("Warning: " + w);
  }
  return out;
}

}  // namespace smddp::diag
