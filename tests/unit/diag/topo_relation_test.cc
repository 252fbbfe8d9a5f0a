// Device relations in the style of nvidia-smi topo -m.
#include <gtest/gtest.h>

#include "topo/model.h"

namespace smddp::diag {
namespace {

Device dev(DeviceKind kind, std::string busid, std::vector<std::string> bridges, std::string host_bridge, int numa) {
  Device d;
  d.kind = kind;
  d.busid = std::move(busid);
  d.bridges = std::move(bridges);
  d.host_bridge = std::move(host_bridge);
  d.numa = numa;
  return d;
}

TEST(Relation, EveryKind) {
  // Switch: upstream U, downstream ports D0 D1 D2; D2 leads to a nested switch U2/D3.
  Device g0 = dev(DeviceKind::Gpu, "0000:12:00.0", {"D0", "U"}, "H0", 0);
  Device g1 = dev(DeviceKind::Gpu, "0000:13:00.0", {"D1", "U"}, "H0", 0);
  Device g2 = dev(DeviceKind::Gpu, "0000:16:00.0", {"D3", "U2", "D2", "U"}, "H0", 0);
  Device g3 = dev(DeviceKind::Gpu, "0000:22:00.0", {"E0", "V"}, "H0", 0);
  Device g4 = dev(DeviceKind::Gpu, "0000:32:00.0", {"F0", "W"}, "H1", 0);
  Device g5 = dev(DeviceKind::Gpu, "0000:92:00.0", {"G0", "X"}, "H2", 1);
  Device n0 = dev(DeviceKind::Nic, "0000:14:00.0", {"D0", "U"}, "H0", 0);  // same port as g0
  EXPECT_EQ(relation(g0, g0), "X");
  EXPECT_EQ(relation(g0, g1), "PIX");
  EXPECT_EQ(relation(g0, n0), "PIX");
  EXPECT_EQ(relation(g0, g2), "PXB");
  EXPECT_EQ(relation(g2, g0), "PXB");
  EXPECT_EQ(relation(g0, g3), "PHB");
  EXPECT_EQ(relation(g0, g4), "NODE");
  EXPECT_EQ(relation(g0, g5), "SYS");
  Device unknown = dev(DeviceKind::Nic, "0000:99:00.0", {}, "", -1);
  EXPECT_EQ(relation(g0, unknown), "SYS");
}

TEST(Relation, NvlinkDirectAndThroughSwitches) {
  Device a = dev(DeviceKind::Gpu, "0000:12:00.0", {"S"}, "cpu0", 0);
  Device b = dev(DeviceKind::Gpu, "0000:92:00.0", {"T"}, "cpu1", 1);
  a.nvlinks = {{"0000:c3:00.0", 6}, {"0000:c4:00.0", 6}};
  b.nvlinks = {{"0000:c3:00.0", 6}, {"0000:c4:00.0", 6}};
  a.nvlink_to_switch = b.nvlink_to_switch = true;
  EXPECT_EQ(relation(a, b), "NV12");
  Device c = dev(DeviceKind::Gpu, "0000:13:00.0", {"S"}, "cpu0", 0);
  Device d = dev(DeviceKind::Gpu, "0000:14:00.0", {"S"}, "cpu0", 0);
  c.nvlinks = {{"0000:14:00.0", 4}};
  EXPECT_EQ(relation(c, d), "NV4");
  EXPECT_EQ(relation(c, a), "PIX");  // no link from c to a: PCI decides
}

TEST(Relation, NearestNicPerGpu) {
  Topology t;
  t.numa = {{0, 0, 0, "0-23"}, {1, 1, 0, "24-47"}};
  t.devices = {dev(DeviceKind::Gpu, "0000:12:00.0", {"D0", "U"}, "H0", 0), dev(DeviceKind::Nic, "0000:14:00.0", {"D1", "U"}, "H0", 0),
               dev(DeviceKind::Nic, "0000:94:00.0", {"E1", "V"}, "H1", 1)};
  TopoMatrix m = build_matrix(t);
  ASSERT_EQ(m.labels, (std::vector<std::string>{"GPU0", "NIC0", "NIC1"}));
  auto a = gpu_affinity(t, m);
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0].nics, std::vector<std::string>{"NIC0"});
  EXPECT_EQ(a[0].relation, "PIX");
  EXPECT_EQ(a[0].cpus, "0-23");
}

}  // namespace
}  // namespace smddp::diag
