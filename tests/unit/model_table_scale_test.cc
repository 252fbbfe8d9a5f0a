// The model's selection table at scale (algorithms/model_table.h): jobs
// over 16 hosts drawn on proxies and each candidate's time carried to the
// job's host count, against schedules drawn in full; what the one proxy of
// 64 ranks got wrong at 1024 x 8; and the table's setup cost (printed, never
// asserted).
#include <gtest/gtest.h>

#include <bit>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <map>
#include <string>
#include <utility>

#include "algorithms/model_table.h"
#include "algorithms/registry.h"
#include "algorithms/selector.h"
#include "job_shape_testing.h"
#include "patterns/schedule_for.h"

using namespace smddp;
using smddp::testing::job;

TEST(ModelTable, ScaleDrawnInFullUpTo16HostsCarriedFromProxiesAbove) {
  const auto small = model_table::modelled_scale(job(16, 8));  // 128 ranks: itself
  EXPECT_EQ(small.topology.hosts, 16);
  EXPECT_TRUE(small.proxies.empty());
  EXPECT_EQ(small.text(), "");
  const auto big = model_table::modelled_scale(job(1024, 8));
  EXPECT_EQ(big.topology.hosts, 1024);
  EXPECT_EQ(big.topology.ranks_per_host, 8);
  ASSERT_EQ(big.proxies.size(), model_table::kProxyHosts.size());
  // The weights reproduce the basis at 1024 hosts: sum w = 1, sum w H = 1024, sum w log2 H = 10.
  double one = 0, hosts = 0, logs = 0;
  for (size_t k = 0; k < big.proxies.size(); ++k) {
    EXPECT_EQ(big.proxies[k].ranks_per_host, 8);
    one += big.weights[k];
    hosts += big.weights[k] * big.proxies[k].hosts;
    logs += big.weights[k] * std::log2(big.proxies[k].hosts);
  }
  EXPECT_NEAR(one, 1, 1e-9);
  EXPECT_NEAR(hosts, 1024, 1e-6);
  EXPECT_NEAR(logs, 10, 1e-6);
  EXPECT_EQ(big.text(), "drawn on 2, 4, 8, 16 hosts x 8 ranks, carried to 1024 hosts");
  // Off powers of two, proxies that are too (their fix-up steps drawn), and floor(log2 H) in the basis.
  const auto odd = model_table::modelled_scale(job(1000, 8));
  ASSERT_EQ(odd.proxies.size(), model_table::kProxyHostsOffPowersOfTwo.size());
  double odd_logs = 0;
  for (size_t k = 0; k < odd.proxies.size(); ++k) {
    EXPECT_FALSE(std::has_single_bit(unsigned(odd.proxies[k].hosts)));
    odd_logs += odd.weights[k] * std::floor(std::log2(odd.proxies[k].hosts));
  }
  EXPECT_NEAR(odd_logs, 9, 1e-6);
  const auto wide = model_table::modelled_scale(job(4, 256));
  EXPECT_EQ(wide.topology.ranks_per_host, model_table::kProxyRanksPerHost);
  EXPECT_EQ(wide.topology.hosts, 4);
}

// The carried time against the one drawn at full scale, with the socket
// and the fabric figures, every host algorithm of every collective that
// accepts the job, 8 B to 1 GiB by 4x (by 2x the same, at twice the time:
// 30 s under the sanitizers). Host counts that are powers of two (32 x 4,
// 64 x 2): within 1% from 1 KiB to 8 MiB, within 12% at every size (below 1
// KiB some ranks hold no element; from 16 MiB sharded's 2 MiB pipeline
// chunks of a 1/H sub-shard and slot-sized messages round per proxy), and
// the fastest algorithm the same at every size. Other host counts (24 x 4,
// 20 x 6, 24 x 1; proxies of 3-33 hosts): within 35%, and the carried choice
// at most 5% slower than the fastest at full scale (when written: the
// largest differences 30% for recursive doubling on 20 x 6, whose 120 ranks
// are off a power of two by another share than the proxies', 10% for
// recursive halving on 24 x 4; the carried choice at most 1.1% slower).
// The cross groups' allreduce within the same bounds.
TEST(ModelTable, CarriedTimesMatchFullScaleDrawings) {
  const Selector nested(default_rules());
  for (const char* transport : {"socket", "fabric"}) {
    const auto p = model_table::builtin(transport);
    for (auto [hosts, per_host] : {std::pair{32, 4}, std::pair{64, 2}, std::pair{24, 4}, std::pair{20, 6},
                                   std::pair{24, 1}}) {
      const auto carried = model_table::modelled_scale(job(hosts, per_host));
      ASSERT_FALSE(carried.proxies.empty());
      const model_table::Scale full{carried.topology, {}, {}};
      const bool power_of_two = std::has_single_bit(unsigned(hosts));
      for (Collective c : all_collectives()) {
        for (size_t bytes = 8; bytes <= (size_t{1} << 30); bytes *= 4) {
          const std::string where = std::string(transport) + " " + std::string(to_string(c)) + " " +
                                    std::to_string(hosts) + "x" + std::to_string(per_host) + " " +
                                    std::to_string(bytes) + " B ";
          const double tolerance = !power_of_two ? 0.35 : bytes >= 1024 && bytes <= (8 << 20) ? 0.01 : 0.12;
          std::map<std::string, double> at_full;
          std::pair<double, std::string> fastest_full{1e300, ""}, fastest_carried{1e300, ""};
          for (const auto& name : schedule::algorithms(c)) {
            if (find_algorithm(c, name)->accepts(
                    schedule::modelled_shape(c, GroupKind::World, full.topology, bytes, schedule::Options{}))) {
              continue;  // declines the job
            }
            const double want = model_table::predicted_at(p.model, nested, c, GroupKind::World, full, bytes, name);
            const double got = model_table::predicted_at(p.model, nested, c, GroupKind::World, carried, bytes, name);
            EXPECT_NEAR(got, want, tolerance * want) << where << name;
            at_full[name] = want;
            fastest_full = std::min(fastest_full, {want, name});
            fastest_carried = std::min(fastest_carried, {got, name});
          }
          if (power_of_two) {
            EXPECT_EQ(fastest_carried.second, fastest_full.second) << where;
          } else if (!at_full.empty()) {
            EXPECT_LE(at_full[fastest_carried.second], 1.05 * fastest_full.first)
                << where << fastest_carried.second << " carried, " << fastest_full.second << " at full scale";
          }
        }
      }
    }
  }
  // The cross groups (one rank a host, inside hierarchical and sharded):
  // allreduce on the same scales and grid, within the same bounds.
  for (auto [hosts, per_host] : {std::pair{32, 4}, std::pair{24, 4}, std::pair{20, 6}}) {
    const auto p = model_table::builtin("socket");
    const auto carried = model_table::modelled_scale(job(hosts, per_host));
    const model_table::Scale full{carried.topology, {}, {}};
    const bool power_of_two = std::has_single_bit(unsigned(hosts));
    for (size_t bytes = 8; bytes <= (size_t{1} << 30); bytes *= 4) {
      const double tolerance = !power_of_two ? 0.35 : bytes >= 1024 && bytes <= (8 << 20) ? 0.01 : 0.12;
      for (const auto& name : schedule::algorithms(Collective::AllReduce)) {
        const double want =
            model_table::predicted_at(p.model, nested, Collective::AllReduce, GroupKind::Cross, full, bytes, name);
        if (want < 0) continue;  // a node-only algorithm
        EXPECT_NEAR(model_table::predicted_at(p.model, nested, Collective::AllReduce, GroupKind::Cross, carried,
                                              bytes, name),
                    want, tolerance * want)
            << "cross " << hosts << "x" << per_host << " " << bytes << " B " << name;
      }
    }
  }
  // 512 ranks, one a host (drawn in full here only: about a second): the
  // algorithms whose steps grow with the hosts, and the trees.
  const auto p = model_table::builtin("socket");
  const auto carried = model_table::modelled_scale(job(512, 1));
  const model_table::Scale full{carried.topology, {}, {}};
  for (auto [c, name] : {std::pair{Collective::Broadcast, "chain"}, {Collective::Broadcast, "tree"},
                         {Collective::AllReduce, "ring"}, {Collective::AllReduce, "halving_doubling"}}) {
    const double want = model_table::predicted_at(p.model, nested, c, GroupKind::World, full, 1 << 20, name);
    EXPECT_NEAR(model_table::predicted_at(p.model, nested, c, GroupKind::World, carried, 1 << 20, name), want,
                0.01 * want)
        << name;
  }
}

// What the proxy of 8 hosts x 8 ranks got wrong at 1024 x 8: the chain for
// a 1 MiB broadcast (8,191 hops alone) and the ring's 2n - 2 steps where the
// model ties it with halving-doubling. Carried to 1024 hosts (and 1000) they
// cost what they cost there.
TEST(ModelTable, AtScaleNoChainAndNoRingWhereTheirStepsDominate) {
  for (auto [transport, hosts] : {std::pair{"socket", 1024}, {"fabric", 1024}, {"socket", 1000}}) {
    const auto j = job(hosts, 8, transport);
    const auto r = model_table::rank(model_table::builtin(transport), j, {}, default_rules());
    const Selector s(r.rules);
    CallShape shape;
    shape.group = GroupKind::World;
    shape.group_size = hosts * 8;
    shape.nodes = hosts;
    shape.ranks_per_node = 8;
    shape.uniform_nodes = true;
    shape.collective = Collective::Broadcast;
    shape.bytes = 1 << 20;
    EXPECT_NE(s.choose(shape, "auto").info.name, "chain") << transport;
    shape.collective = Collective::AllReduce;
    for (size_t bytes : {size_t{64} << 10, size_t{1} << 20}) {
      shape.bytes = bytes;
      EXPECT_NE(s.choose(shape, "auto").info.name, "ring") << transport << " " << bytes;
    }
    // Nor inside hierarchical or sharded, on the cross groups (one rank a host).
    shape.group = GroupKind::Cross;
    shape.group_size = hosts;
    EXPECT_NE(s.choose(shape, "auto").info.name, "ring") << transport;
  }
}

TEST(ModelTable, SetupCost) {
  for (auto [hosts, per_host] : {std::pair{2, 2}, std::pair{64, 8}, std::pair{1024, 8}}) {
    const auto start = std::chrono::steady_clock::now();
    const Selector s = Selector::from_environment(job(hosts, per_host));
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    std::printf("selection table for %d hosts x %d ranks: %.1f ms\n", hosts, per_host, ms);
    EXPECT_FALSE(s.table(job(hosts, per_host)).ranges.empty());
  }
}
