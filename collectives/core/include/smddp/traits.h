// What each collective is, one row per collective (after nccl-tests, which
// plugs a collective into its harness with one small struct). The engine,
// smddp-bench and the tests read these rows instead of switching on the
// collective, so adding one is a row here plus its algorithms.
//
// Layers: this row holds the layout facts only (buffer extents, in-place
// offsets, root, reduction, bus-bandwidth factor). What belongs to an upper
// layer is keyed by collective in that layer and checked to cover every
// collective at compile time: the expected values (bench/src/sweep/data.cc), the
// MPI call (bench/src/backends/backend_mpi.cc), the NCCL call (backend_nccl.cc), the
// multi-rank test's check (tests/mpi/collectives_test.cc).
#pragma once

#include <array>
#include <cstddef>
#include <span>
#include <string_view>

#include "smddp/types.h"

namespace smddp {

// Elements of a buffer, in terms of the call's `count` and n ranks.
enum class Extent : uint8_t {
  None,     // no buffer (barrier)
  Count,    // count
  Ranks,    // n * count, block r at r * count
  PerPeer,  // the sum of the per-peer counts (alltoallv), packed by peer
};

// How an in-place call places its buffers (NCCL's convention).
enum class InPlace : uint8_t {
  Same,        // send == recv
  SendInRecv,  // send == recv + rank * count (allgather, gather)
  RecvInSend,  // recv == send + rank * count (reduce-scatter, scatter)
};

// Which ranks read (send) or write (recv) a buffer.
enum class Ranks : uint8_t { All, Root };

struct CollectiveTraits {
  Collective collective;
  std::string_view name;
  Extent send, recv;
  InPlace in_place;
  Ranks send_on, recv_on;
  bool has_root;
  bool reduces;
  // busbw = algbw * bus_factor(n), with algbw over the row's bytes (the
  // larger buffer), as nccl-tests defines it for the same collective.
  double (*bus_factor)(int nranks);

  bool per_peer() const { return send == Extent::PerPeer; }
  bool sends_on(int rank, int root) const { return uses(send_on, rank, root); }
  bool receives_on(int rank, int root) const { return uses(recv_on, rank, root); }

 private:
  static bool uses(Ranks r, int rank, int root) {
    return r == Ranks::All || rank == root;
  }
};

namespace detail {
constexpr double one(int) { return 1; }
constexpr double zero(int) { return 0; }
constexpr double spread(int n) { return static_cast<double>(n - 1) / n; }   // (n-1)/n
constexpr double twice(int n) { return 2.0 * (n - 1) / n; }                 // 2(n-1)/n
}  // namespace detail

// Indexed by Collective; the static_assert below keeps it so.
inline constexpr std::array<CollectiveTraits, kNumCollectives> kCollectiveTraits = {{
    {Collective::AllReduce, "allreduce", Extent::Count, Extent::Count, InPlace::Same, Ranks::All, Ranks::All,
     false, true, detail::twice},
    {Collective::AllGather, "allgather", Extent::Count, Extent::Ranks, InPlace::SendInRecv, Ranks::All,
     Ranks::All, false, false, detail::spread},
    {Collective::ReduceScatter, "reducescatter", Extent::Ranks, Extent::Count, InPlace::RecvInSend, Ranks::All,
     Ranks::All, false, true, detail::spread},
    {Collective::Broadcast, "broadcast", Extent::Count, Extent::Count, InPlace::Same, Ranks::Root, Ranks::All,
     true, false, detail::one},
    {Collective::Reduce, "reduce", Extent::Count, Extent::Count, InPlace::Same, Ranks::All, Ranks::Root, true,
     true, detail::one},
    {Collective::AllToAll, "alltoall", Extent::Ranks, Extent::Ranks, InPlace::Same, Ranks::All, Ranks::All,
     false, false, detail::spread},
    {Collective::Barrier, "barrier", Extent::None, Extent::None, InPlace::Same, Ranks::All, Ranks::All, false,
     false, detail::zero},
    {Collective::Gather, "gather", Extent::Count, Extent::Ranks, InPlace::SendInRecv, Ranks::All, Ranks::Root,
     true, false, detail::spread},
    {Collective::Scatter, "scatter", Extent::Ranks, Extent::Count, InPlace::RecvInSend, Ranks::Root, Ranks::All,
     true, false, detail::spread},
    // Ring neighbour exchange: send to rank + 1, receive from rank - 1.
    {Collective::SendRecv, "sendrecv", Extent::Count, Extent::Count, InPlace::Same, Ranks::All, Ranks::All,
     false, false, detail::one},
    {Collective::AllToAllV, "alltoallv", Extent::PerPeer, Extent::PerPeer, InPlace::Same, Ranks::All,
     Ranks::All, false, false, detail::spread},
}};

constexpr bool traits_indexed_by_collective() {
  for (size_t i = 0; i < kCollectiveTraits.size(); ++i) {
    if (static_cast<size_t>(kCollectiveTraits[i].collective) != i) return false;
  }
  return true;
}
static_assert(traits_indexed_by_collective(), "kCollectiveTraits rows must follow enum Collective");

constexpr const CollectiveTraits& traits(Collective c) { return kCollectiveTraits[static_cast<size_t>(c)]; }

// Elements of a buffer of extent `e` (PerPeer: the sum of `per_peer`, n entries).
constexpr size_t extent_elements(Extent e, size_t count, int nranks, const size_t* per_peer = nullptr) {
  switch (e) {
    case Extent::None: return 0;
    case Extent::Count: return count;
    case Extent::Ranks: return count * static_cast<size_t>(nranks);
    case Extent::PerPeer: {
      size_t sum = 0;
      for (int r = 0; per_peer && r < nranks; ++r) sum += per_peer[r];
      return sum;
    }
  }
  return 0;
}

// Checks, at compile time, that a per-layer table keyed by collective (rows
// with a `collective` member) has one row per collective, in enum order.
template <typename Row, size_t N>
constexpr bool covers_every_collective(const std::array<Row, N>& rows) {
  if (N != static_cast<size_t>(kNumCollectives)) return false;
  for (size_t i = 0; i < N; ++i) {
    if (static_cast<size_t>(rows[i].collective) != i) return false;
  }
  return true;
}

}  // namespace smddp
