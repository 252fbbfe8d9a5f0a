// Network and RDMA devices discovered from sysfs (under SystemRoot, so a test
// can hand us a fake tree): EFA devices are RDMA devices under
// /sys/class/infiniband whose PCI vendor is Amazon's 0x1d0f; ENA and other
// NICs come from /sys/class/net.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "shared/files.h"

namespace smddp::diag {

inline constexpr uint16_t kAmazonVendor = 0x1d0f;
inline constexpr uint16_t kNvidiaVendor = 0x10de;

struct PciAttributes {
  std::string busid;
  uint16_t vendor = 0, device = 0;
  uint32_t class_id = 0;  // 24-bit class code, e.g. 0x020000
  int numa = -1;
};
// /sys/bus/pci/devices/BUSID; nullopt when absent.
std::optional<PciAttributes> read_pci_device(const SystemRoot& root, const std::string& busid);

// "efa", "ena", "infiniband", "ethernet" or "network" from PCI identity.
std::string nic_kind(uint16_t vendor, uint16_t device, uint32_t class_id);

struct RdmaPort {
  int port = 0;  // 0: the device-wide hw_counters directory
  std::string state;  // "ACTIVE", "DOWN", ... ("" when unknown)
  std::vector<std::pair<std::string, uint64_t>> counters;  // hw_counters, sorted by name
};

struct RdmaDevice {
  std::string name;  // rdmap16s27, mlx5_0
  bool efa = false;
  std::optional<PciAttributes> pci;
  std::vector<RdmaPort> ports;
};
std::vector<RdmaDevice> discover_rdma(const SystemRoot& root, bool with_counters);

struct NetDevice {
  std::string name;  // eth0
  std::string kind;  // ena, ethernet, ..., or "virtual" without a PCI device
  std::optional<PciAttributes> pci;
  std::string operstate;
};
std::vector<NetDevice> discover_net(const SystemRoot& root);

}  // namespace smddp::diag
