#include <algorithm>

#include "topo/model.h"

namespace smddp::diag {

std::vector<const Device*> Topology::gpus() const {
  std::vector<const Device*> out;
  for (const auto& d : devices) {
    if (d.kind == DeviceKind::Gpu) out.push_back(&d);
  }
  std::stable_sort(out.begin(), out.end(), [](const Device* a, const Device* b) {
    int ia = a->gpu_index < 0 ? 1 << 30 : a->gpu_index, ib = b->gpu_index < 0 ? 1 << 30 : b->gpu_index;
    return ia != ib ? ia < ib : a->busid < b->busid;
  });
  return out;
}

std::vector<const Device*> Topology::nics() const {
  std::vector<const Device*> out;
  for (const auto& d : devices) {
    if (d.kind == DeviceKind::Nic) out.push_back(&d);
  }
  std::stable_sort(out.begin(), out.end(), [](const Device* a, const Device* b) { return a->busid < b->busid; });
  return out;
}

namespace {

int nvlink_count(const Device& a, const Device& b) {
  if (a.kind != DeviceKind::Gpu || b.kind != DeviceKind::Gpu) return 0;
  if (auto it = a.nvlinks.find(b.busid); it != a.nvlinks.end() && !b.busid.empty()) return it->second;
  if (a.nvlink_to_switch && b.nvlink_to_switch) {
    int sa = 0, sb = 0;
    for (const auto& [t, n] : a.nvlinks) sa += n;
    for (const auto& [t, n] : b.nvlinks) sb += n;
    return std::min(sa, sb);
  }
  return 0;
}

}  // namespace

std::string relation(const Device& a, const Device& b) {
  if (&a == &b) return "X";
  if (int n = nvlink_count(a, b); n > 0) return "NV" + std::to_string(n);
  // The lowest bridge both devices sit under, and how many bridges each
  // crosses below it: one switch at most on either side is PIX.
  for (size_t i = 0; i < a.bridges.size(); ++i) {
    auto it = std::find(b.bridges.begin(), b.bridges.end(), a.bridges[i]);
    if (it == b.bridges.end()) continue;
    size_t below_b = static_cast<size_t>(it - b.bridges.begin());
    return (i <= 1 && below_b <= 1) ? "PIX" : "PXB";
  }
  if (!a.host_bridge.empty() && a.host_bridge == b.host_bridge) return "PHB";
  if (a.numa >= 0 && a.numa == b.numa) return "NODE";
  return "SYS";
}

int relation_rank(const std::string& rel) {
  if (rel == "X") return 0;
  if (rel.rfind("NV", 0) == 0) return 1;
  if (rel == "PIX") return 2;
  if (rel == "PXB") return 3;
  if (rel == "PHB") return 4;
  if (rel == "NODE") return 5;
  return 6;
}

TopoMatrix build_matrix(const Topology& topo) {
  TopoMatrix m;
  auto gpus = topo.gpus();
  auto nics = topo.nics();
  for (size_t i = 0; i < gpus.size(); ++i) {
    m.labels.push_back("GPU" + std::to_string(i));
    m.devices.push_back(gpus[i]);
  }
  for (size_t i = 0; i < nics.size(); ++i) {
    m.labels.push_back("NIC" + std::to_string(i));
    m.devices.push_back(nics[i]);
  }
  for (const Device* a : m.devices) {
    std::vector<std::string> row;
    for (const Device* b : m.devices) row.push_back(relation(*a, *b));
    m.cells.push_back(std::move(row));
  }
  return m;
}

std::vector<GpuAffinity> gpu_affinity(const Topology& topo, const TopoMatrix& matrix) {
  std::vector<GpuAffinity> out;
  for (size_t i = 0; i < matrix.devices.size(); ++i) {
    const Device* g = matrix.devices[i];
    if (g->kind != DeviceKind::Gpu) continue;
    GpuAffinity a;
    a.gpu = matrix.labels[i];
    a.numa = g->numa;
    for (const auto& n : topo.numa) {
      if (n.os_index == g->numa) a.cpus = n.cpus;
    }
    int best = 1 << 30;
    for (size_t j = 0; j < matrix.devices.size(); ++j) {
      if (matrix.devices[j]->kind != DeviceKind::Nic) continue;
      int r = relation_rank(matrix.cells[i][j]);
      if (r < best) {
        best = r;
        a.nics.clear();
        a.relation = matrix.cells[i][j];
      }
      if (r == best) a.nics.push_back(matrix.labels[j]);
    }
    out.push_back(std::move(a));
  }
  return out;
}

}  // namespace smddp::diag
