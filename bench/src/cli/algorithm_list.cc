// smddp-bench --list-algorithms [--explain] (docs/bench.md, "Which
// algorithm runs"): the registry's algorithms, and the selection table a
// communicator built.
#include "cli/algorithm_list.h"

#include <cstdio>
#include <limits>
#include <string>

#include "backends/backend.h"
#include "smddp/algorithms.h"

namespace smddp::bench {
namespace {

// A size as the table prints it: bytes, or KiB/MiB/GiB when whole.
std::string size_text(size_t bytes) {
  if (bytes == std::numeric_limits<size_t>::max()) return "inf";
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (u < 4 && bytes >= 1024 && bytes % 1024 == 0) {
    bytes /= 1024;
    ++u;
  }
  return std::to_string(bytes) + " " + units[u];
}

std::string time_text(double us) {
  char buf[32];
  if (us < 0) return "-";
  if (us < 1000) {
    std::snprintf(buf, sizeof buf, "%.1f us", us);
  } else if (us < 1e6) {
    std::snprintf(buf, sizeof buf, "%.2f ms", us / 1e3);
  } else {
    std::snprintf(buf, sizeof buf, "%.2f s", us / 1e6);
  }
  return buf;
}

}  // namespace

void print_algorithms() {
  std::printf("%-14s %-19s %-6s %s\n", "collective", "algorithm", "memory", "description (declines when)");
  for (const auto& a : list_algorithms()) {
    std::string mem = a.cuda_memory ? (a.host_memory ? "both" : "cuda") : "host";
    std::printf("%-14s %-19s %-6s %s (%s)\n", std::string(to_string(a.collective)).c_str(),
                std::string(a.name).c_str(), mem.c_str(), std::string(a.description).c_str(),
                std::string(a.constraints).c_str());
  }
}

void print_mpi_algorithms() {
  std::printf("%-14s %-19s %s\n", "collective", "algorithm", "Open MPI variable (--backend mpi:ALGORITHM forces it)");
  for (const auto& c : mpi_tuned_algorithm_list()) {
    for (const auto& a : c.algorithms) {
      std::printf("%-14s %-19s coll_tuned_%s_algorithm\n", std::string(to_string(c.collective)).c_str(), a.c_str(),
                  c.call.c_str());
    }
  }
}

// --list-algorithms --explain: the selection table the communicator built
// (docs/bench.md, "Which algorithm runs").
void print_selection(const SelectionTable& t) {
  std::printf("# selection for %d host(s) x %d rank(s), network transport %s\n", t.hosts, t.ranks_per_host,
              t.transport.c_str());
  if (t.parameters.empty()) {
    std::printf("# no cost model (one node): measured rows\n");
  } else {
    std::printf("# model parameters: %s\n", t.parameters.c_str());
    if (t.modelled_hosts != t.hosts || t.modelled_ranks_per_host != t.ranks_per_host) {
      std::printf("# ranked as %d hosts x %d ranks (docs/engine.md)\n", t.modelled_hosts, t.modelled_ranks_per_host);
    }
    if (!t.ranked_on.empty()) std::printf("# %s (docs/engine.md)\n", t.ranked_on.c_str());
  }
  for (const auto& f : t.forced) std::printf("# forced for the caller's calls: %s\n", f.c_str());
  std::printf("%-14s %-6s %-23s %-19s %-11s %-19s %-11s %-9s %s\n", "collective", "group", "sizes", "algorithm",
              "predicted", "runner-up", "predicted", "at", "source");
  for (const auto& r : t.ranges) {
    // [0 B, 2 KiB], (2 KiB, 128 KiB], ...: a range starts above the one before.
    const std::string sizes = (r.min_bytes == 0 ? "[0 B, " : "(" + size_text(r.min_bytes - 1) + ", ") +
                              size_text(r.max_bytes) + "]";
    const std::string second = r.candidates.size() > 1 ? r.candidates[1] : "-";
    std::printf("%-14s %-6s %-23s %-19s %-11s %-19s %-11s %-9s %s\n", std::string(to_string(r.collective)).c_str(),
                r.group.c_str(), sizes.c_str(), r.candidates.empty() ? "-" : r.candidates[0].c_str(),
                time_text(r.predicted_us).c_str(), second.c_str(), time_text(r.runner_up_us).c_str(),
                r.predicted_us < 0 ? "-" : size_text(r.at_bytes).c_str(), r.source.c_str());
  }
  std::fflush(stdout);
}

}  // namespace smddp::bench
