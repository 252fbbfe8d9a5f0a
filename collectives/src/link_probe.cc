#include "link_probe.h"

#include <algorithm>
#include <chrono>
#include <string>
#include <vector>

namespace smddp {
namespace {

using Clock = std::chrono::steady_clock;

constexpr int kRoundTrips = 4;  // 8 B: the time the big message's answer also takes
constexpr int kTries = 2;       // the big message, the faster one counts (a cold connection first)

double since_us(Clock::time_point t0) {
  return std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
}

}  // namespace

std::optional<LinkFigures> probe_network_link(Context& ctx, Bootstrap& bootstrap, const Topology& topo,
                                              bool wanted) {
  if (topo.num_nodes < 2) return std::nullopt;
  // Node ids go by first appearance, so rank 0 is on node 0; its peer is
  // one of its socket partners (socket_partners(): distance 1 among the
  // nodes' first ranks), connected at setup.
  const int peer = topo.node_ranks[1][0];
  double mine = 0;  // GB/s; 0: no figures
  if (topo.rank == 0 || topo.rank == peer) {
    // Rank 0 tells its peer whether to go on: the decision is rank 0's alone.
    char go = wanted ? 1 : 0;
    const Group& world = ctx.world;
    const int other = topo.rank == 0 ? peer : 0;
    if (topo.rank == 0) {
      ctx.send(world, other, &go, 1);
    } else {
      ctx.recv(world, other, &go, 1);
    }
    if (go) {
      char small[8] = {};
      std::vector<char> big(kLinkProbeBytes);
      // Rank 0 sends `bytes` and waits for 8 B back; its peer answers.
      auto timed_round = [&](char* buffer, size_t bytes) {
        const auto t0 = Clock::now();
        if (topo.rank == 0) {
          ctx.send(world, other, buffer, bytes);
          ctx.recv(world, other, small, sizeof small);
        } else {
          ctx.recv(world, other, buffer, bytes);
          ctx.send(world, other, small, sizeof small);
        }
        return since_us(t0);
      };
      double round_trip = 1e300, message = 1e300;
      for (int i = 0; i < kRoundTrips; ++i) round_trip = std::min(round_trip, timed_round(small, sizeof small));
      for (int i = 0; i < kTries; ++i) message = std::min(message, timed_round(big.data(), big.size()));
      // Bytes per microsecond are MB/s. A message no slower than the round
      // trip cannot be told apart from it: no figures (the built-in ones stay).
      const double wire_us = message - round_trip;
      if (topo.rank == 0 && wire_us > 0) mine = static_cast<double>(kLinkProbeBytes) / wire_us * 1e-3;
    }
  }
  std::vector<double> all(static_cast<size_t>(topo.size));
  bootstrap.allgather(&mine, all.data(), sizeof mine);
  if (!(all[0] > 0)) return std::nullopt;
  LinkFigures f;
  f.gbytes_per_s = all[0];
  f.source = "the setup probe (rank 0 on " + topo.hosts[0] + " to rank " + std::to_string(peer) + " on " +
             topo.hosts[static_cast<size_t>(peer)] + ", " + std::to_string(kLinkProbeBytes >> 20) + " MiB)";
  return f;
}

}  // namespace smddp
