// One topology model for every source (hwloc discovery, hwloc XML, NCCL's
// topology XML) and the relations between devices in the style of
// `nvidia-smi topo -m`.
//
// Vocabulary:
//   bridge       a PCI bridge or switch between a device and its host bridge;
//                NCCL's XML shows a whole switch as one <pci> bridge element.
//   host bridge  where the PCI tree meets the CPU (a root complex); NCCL's XML
//                has one implicit host bridge per <cpu>.
//   relation     PIX  at most one switch between the two devices
//                PXB  several switches, no host bridge
//                PHB  through one host bridge (the CPU)
//                NODE across host bridges inside one NUMA node
//                SYS  across NUMA nodes (the SMP interconnect)
//                NV#  GPU pairs joined by NVLink (# links; NCCL XML only)
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace smddp::diag {

enum class DeviceKind { Gpu, Nic, Other };

struct Device {
  DeviceKind kind = DeviceKind::Other;
  std::string busid;       // canonical "0000:10:1c.0"; may be empty for a NIC NCCL lists without one
  uint32_t class_id = 0;   // 24-bit class code
  uint16_t vendor = 0, device = 0;
  std::string name;        // OS names: "rdmap16s27", "eth0", "cuda0"
  std::string model;       // marketing name when known ("NVIDIA A100-SXM4-40GB")
  std::string nic_kind;    // efa, ena, ethernet, infiniband (NICs)
  int numa = -1;           // NUMA node, -1 unknown or several
  std::string host_bridge;             // id; "" unknown
  std::vector<std::string> bridges;    // bridge ids from the device upwards
  std::map<std::string, int> nvlinks;  // NCCL XML: target busid -> link count
  bool nvlink_to_switch = false;       // those targets are NVSwitches
  int gpu_index = -1;                  // NVML / NCCL "dev" index when known
  uint64_t memory_bytes = 0;           // GPU memory from NVML; 0 unknown
  int sm = -1;                         // GPU compute capability x10 (NCCL <gpu sm>); -1 unknown
  int64_t speed_mbps = -1;             // NIC link speed, Mb/s (NCCL <net speed>); -1 unknown
};

struct NumaNode {
  int os_index = 0;
  int package = -1;
  uint64_t memory_bytes = 0;
  std::string cpus;  // "0-23,48-71"
};

struct CacheLevel {
  std::string name;  // "L1d", "L1i", "L2", "L3"
  uint64_t size_bytes = 0;
  int count = 0;
};

struct Topology {
  std::string source;  // "hwloc discovery", "hwloc XML FILE", "NCCL XML FILE"
  std::string hostname;
  int packages = 0, numa_nodes = 0, cores = 0, pus = 0;
  uint64_t memory_bytes = 0;
  std::vector<NumaNode> numa;
  std::vector<CacheLevel> caches;
  std::vector<Device> devices;  // PCI endpoints (bridges are not listed)
  int bridges = 0;
  std::vector<std::string> notes;     // plain statements: "no NVIDIA GPU: ..."
  std::vector<std::string> warnings;  // what the input left out: "3 PCI devices could not be identified ..."

  std::vector<const Device*> gpus() const;  // by GPU index, then bus id
  std::vector<const Device*> nics() const;  // by bus id
};

// "PIX", "PXB", "PHB", "NODE", "SYS", "NV12" or "X" for the same device.
std::string relation(const Device& a, const Device& b);

// Rank of a relation for "nearest": smaller is closer (X < NV# < PIX < ... < SYS).
int relation_rank(const std::string& rel);

struct TopoMatrix {
  std::vector<std::string> labels;  // GPU0.., NIC0..
  std::vector<const Device*> devices;
  std::vector<std::vector<std::string>> cells;
};
TopoMatrix build_matrix(const Topology& topo);

struct GpuAffinity {
  std::string gpu;               // GPU0
  int numa = -1;
  std::string cpus;              // CPU list of that NUMA node
  std::vector<std::string> nics; // nearest NIC labels
  std::string relation;          // their relation to the GPU
};
std::vector<GpuAffinity> gpu_affinity(const Topology& topo, const TopoMatrix& matrix);

}  // namespace smddp::diag
