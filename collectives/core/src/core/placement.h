// Placement: where the ranks of a communicator may run, judged once from
// every rank's CPU affinity mask (exchanged through the bootstrap), never
// from one rank's own mask alone: under mpirun's default binding each rank
// sees a single CPU, yet the host has a core for each.
//
// A host is oversubscribed when its ranks cannot each have a CPU of their
// own inside their masks: they outnumber the CPUs of the union of their
// masks, or some of them are confined to the same CPUs (three ranks bound
// to two cores). Unbound ranks that may all use all CPUs are not: the
// scheduler gives each its own. A rank has dedicated cores when its mask
// holds CPUs that no other rank of its host may run on.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace smddp {

// A fixed-size CPU set, so it crosses the bootstrap as plain bytes.
struct CpuMask {
  static constexpr int kMaxCpus = 1024;
  uint64_t words[kMaxCpus / 64] = {};

  void set(int cpu) { words[cpu / 64] |= uint64_t{1} << (cpu % 64); }
  bool has(int cpu) const { return (words[cpu / 64] >> (cpu % 64)) & 1; }
  int count() const;
  bool empty() const { return count() == 0; }
  static CpuMask of(std::initializer_list<int> cpus);
};

// What one rank contributes to the exchange.
struct RankCpus {
  CpuMask cpus;
  uint64_t numa_nodes = 0;  // bit k: the mask holds a CPU of NUMA node k (k < 64)
};

struct Placement {
  // This rank's host.
  int host_ranks = 1;            // ranks of the communicator on it
  int host_cpus = 0;             // CPUs in the union of their masks
  bool oversubscribed = false;   // its ranks cannot each have a CPU of their own
  bool dedicated_cores = false;  // this rank has CPUs no other rank of its host has
  uint64_t numa_nodes = 0;       // this rank's NUMA nodes (RankCpus)
  // Over every host: the same on all ranks, so algorithm selection (which
  // must agree everywhere) may key on it.
  bool any_host_oversubscribed = false;

  // Waits give the core away early (Backoff).
  bool shared_cores() const { return oversubscribed; }
  // Selector rules marked dedicated_cores apply: every rank of every host
  // has a core to itself.
  bool cores_to_spare() const { return !any_host_oversubscribed; }
};

// The verdict for rank `me`: ranks[i] is rank i's contribution, host_of[i]
// its host (any integer id; equal ids share a host). Pure: unit-tested.
Placement judge_placement(std::span<const RankCpus> ranks, std::span<const int> host_of, int me);

// True when every rank can get a distinct CPU of its own mask.
bool each_rank_gets_a_cpu(std::span<const CpuMask> masks);

// "0-3,8,10-11" (the kernel's cpulist format) as a mask; empty on bad text.
CpuMask parse_cpu_list(std::string_view text);

// This process's affinity mask and the NUMA nodes it touches (sysfs).
RankCpus probe_this_rank();

// "oversubscribed=0 dedicated_cores=1 host_ranks=2 host_cpus=2 numa=0"
std::string describe(const Placement& p);

}  // namespace smddp
