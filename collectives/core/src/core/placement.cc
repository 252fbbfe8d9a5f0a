#include "core/placement.h"

#include <sched.h>
#include <unistd.h>

#include <bit>
#include <fstream>
#include <sstream>

#include "smddp/common/strings.h"

namespace smddp {
namespace {

// Kuhn's augmenting paths: can rank r take a CPU, moving others aside?
bool assign(std::span<const CpuMask> masks, int r, std::vector<int>& owner, std::vector<char>& seen) {
  for (int cpu = 0; cpu < CpuMask::kMaxCpus; ++cpu) {
    if (!masks[r].has(cpu) || seen[cpu]) continue;
    seen[cpu] = 1;
    if (owner[cpu] < 0 || assign(masks, owner[cpu], owner, seen)) {
      owner[cpu] = r;
      return true;
    }
  }
  return false;
}

}  // namespace

int CpuMask::count() const {
  int n = 0;
  for (uint64_t w : words) n += std::popcount(w);
  return n;
}

CpuMask CpuMask::of(std::initializer_list<int> cpus) {
  CpuMask m;
  for (int c : cpus) m.set(c);
  return m;
}

bool each_rank_gets_a_cpu(std::span<const CpuMask> masks) {
  std::vector<int> owner(CpuMask::kMaxCpus, -1);
  for (int r = 0; r < static_cast<int>(masks.size()); ++r) {
    std::vector<char> seen(CpuMask::kMaxCpus, 0);
    if (!assign(masks, r, owner, seen)) return false;
  }
  return true;
}

Placement judge_placement(std::span<const RankCpus> ranks, std::span<const int> host_of, int me) {
  Placement p;
  p.numa_nodes = ranks[me].numa_nodes;
  const int n = static_cast<int>(ranks.size());
  std::vector<char> judged(n, 0);
  for (int first = 0; first < n; ++first) {
    if (judged[first]) continue;
    std::vector<CpuMask> masks;
    CpuMask all, others;  // others: CPUs of the host's ranks but me
    for (int r = first; r < n; ++r) {
      if (host_of[r] != host_of[first]) continue;
      judged[r] = 1;
      masks.push_back(ranks[r].cpus);
      for (int w = 0; w < CpuMask::kMaxCpus / 64; ++w) {
        all.words[w] |= ranks[r].cpus.words[w];
        if (r != me) others.words[w] |= ranks[r].cpus.words[w];
      }
    }
    const bool over = !each_rank_gets_a_cpu(masks);
    p.any_host_oversubscribed = p.any_host_oversubscribed || over;
    if (host_of[first] != host_of[me]) continue;
    p.host_ranks = static_cast<int>(masks.size());
    p.host_cpus = all.count();
    p.oversubscribed = over;
    for (int w = 0; w < CpuMask::kMaxCpus / 64; ++w) {
      if (ranks[me].cpus.words[w] & ~others.words[w]) p.dedicated_cores = true;
    }
  }
  return p;
}

CpuMask parse_cpu_list(std::string_view text) {
  CpuMask m;
  for (const std::string& part : common::split(text, ',')) {
    int lo = 0, hi = 0;
    char dash = 0;
    std::istringstream range(part);
    if (!(range >> lo)) return {};
    hi = lo;
    if (range >> dash && (dash != '-' || !(range >> hi))) return {};
    if (lo < 0 || hi < lo || hi >= CpuMask::kMaxCpus) return {};
    for (int c = lo; c <= hi; ++c) m.set(c);
  }
  return m;
}

RankCpus probe_this_rank() {
  RankCpus r;
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) == 0) {
    for (int c = 0; c < CpuMask::kMaxCpus && c < CPU_SETSIZE; ++c) {
      if (CPU_ISSET(c, &set)) r.cpus.set(c);
    }
  } else {
    const long online = sysconf(_SC_NPROCESSORS_ONLN);
    for (int c = 0; c < online && c < CpuMask::kMaxCpus; ++c) r.cpus.set(c);
  }
  for (int node = 0; node < 64; ++node) {
    std::ifstream f("/sys/devices/system/node/node" + std::to_string(node) + "/cpulist");
    if (!f) continue;
    std::string list;
    std::getline(f, list);
    const CpuMask cpus = parse_cpu_list(list);
    for (int w = 0; w < CpuMask::kMaxCpus / 64; ++w) {
      if (cpus.words[w] & r.cpus.words[w]) r.numa_nodes |= uint64_t{1} << node;
    }
  }
  return r;
}

std::string describe(const Placement& p) {
  std::string numa;
  for (int k = 0; k < 64; ++k) {
    if (!((p.numa_nodes >> k) & 1)) continue;
    numa += (numa.empty() ? "" : ",") + std::to_string(k);
  }
  return "oversubscribed=" + std::to_string(p.oversubscribed) +
         " dedicated_cores=" + std::to_string(p.dedicated_cores) +
         " host_ranks=" + std::to_string(p.host_ranks) + " host_cpus=" + std::to_string(p.host_cpus) +
         " numa=" + (numa.empty() ? "?" : numa);
}

}  // namespace smddp
