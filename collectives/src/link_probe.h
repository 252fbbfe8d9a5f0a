// The setup probe of the network link (docs/engine.md, "Algorithms and
// selection"). The built-in figures are what this engine reaches on fast
// links; on a much slower one (1 Gbit/s Ethernet) the link sets every
// choice across nodes, and only a measurement on the job's own hosts can
// tell. At communicator creation world rank 0 and the first rank of the
// next node time a few 8 B round trips and a message larger than a rate
// limiter's usual bucket; every rank then takes rank 0's figures, so every
// rank builds the same selection table.
#pragma once

#include <optional>

#include "algorithms/context.h"
#include "smddp/communicator.h"

namespace smddp {

// Collective over `bootstrap`: every rank calls it, after the world group
// exists and before any collective. `wanted`: rank 0's decides for every
// rank (SMDDP_LINK_PROBE, no model file, no figures handed in); unwanted,
// it costs one byte to the peer and the allgather of the result. Returns
// rank 0's figures: the bandwidth of the link (latency_us 0: the probe's
// round trips only take their own time off), or nothing when not wanted or
// the job has one node. Transport errors as any call's (the peer named).
std::optional<LinkFigures> probe_network_link(Context& ctx, Bootstrap& bootstrap, const Topology& topo,
                                              bool wanted);

// The probe's message: larger than a token bucket's usual burst (tc's
// 128-500 KB), so a rate-limited link shows its rate.
inline constexpr size_t kLinkProbeBytes = size_t{4} << 20;

}  // namespace smddp
