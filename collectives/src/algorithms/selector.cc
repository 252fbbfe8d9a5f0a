#include "algorithms/selector.h"

#include <limits>
#include <sstream>

#include "core/placement.h"
#include "smddp/common/input_file.h"
#include "smddp/common/sizes.h"
#include "smddp/common/strings.h"
#include "smddp/config.h"
#include "smddp/error.h"
#include "smddp/traits.h"

namespace smddp {
namespace {

constexpr size_t kAny = std::numeric_limits<size_t>::max();
constexpr size_t kSmall = 64 * 1024;  // latency-bound below, bandwidth-bound above
// Whole-vector exchanges across nodes up to here: one round trip per partner
// instead of halving-doubling's two. At 32 KiB in the cross group it is
// 0.69x halving-doubling's time on 2 hosts x 1 rank, 0.87x on 4 x 1, and
// 0.80-0.90x of the 64 KiB allreduce on 2 and 4 hosts x 2 ranks
// (docs/performance-history.md, issue 17); its extra bytes on 4 nodes (2S against
// 1.5S) cost less than the two rounds it saves, on shared cores.
constexpr size_t kSingleExchangeUpTo = 32 * 1024;
constexpr size_t kShardedUpTo = 1024 * 1024;  // sharded allreduce across nodes up to here
// Around here single-copy (cma) algorithms inside a node start to win:
// below, their extra synchronisation costs more than the copy they save.
// Each collective's rows below place its own crossover (docs/performance-history.md).
constexpr size_t kStagedUpTo = 1024 * 1024;

struct DefaultRule {
  Collective collective;
  Scope scope;
  size_t max_bytes;
  const char* candidates;
  bool dedicated_cores = false;
  MemoryKind memory = MemoryKind::Host;
};

// The default choices. Rows are tried top-down; the first row of the
// collective and scope whose max_bytes covers the call gives the order.
constexpr DefaultRule kDefaults[] = {
    // Single-copy allreduce pays off from 1 MiB when every rank has its core
    // (2 ranks, 8 MiB: 9.0 GB/s against 4.0 staged; 1 MiB: 140 us against
    // 182); with ranks sharing cores its two long phases lose to the staged
    // pipeline up to ~64 MiB.
    {Collective::AllReduce, Scope::SingleNode, kStagedUpTo / 2, "shm_direct,halving_doubling,ring"},
    {Collective::AllReduce, Scope::SingleNode, kAny, "cma,shm_direct,halving_doubling,ring", true},
    {Collective::AllReduce, Scope::SingleNode, kStagedUpTo, "shm_direct,halving_doubling,ring"},
    {Collective::AllReduce, Scope::SingleNode, kAny, "shm_direct,halving_doubling,ring"},
    // Across hosts (docs/performance-history.md): small vectors go
    // hierarchical (shm inside the node, one log2(M) exchange between nodes),
    // 2-5x faster than halving-doubling over all ranks; the sharded exchange
    // wins on mid sizes, where its two direct steps beat the ring's 2(M-1)
    // hops; above, both are bound by the link and hierarchical moves fewer
    // pieces. Within the cross group (one rank per node, under hierarchical)
    // small vectors take halving-doubling, mid ones the sharded exchange
    // (2 steps instead of the ring's 2(M-1)), large ones the ring: with four
    // hosts on shaped links the sharded all-to-all congests each host's
    // inbound link (busbw 0.09 vs 0.11 GB/s at 64 MiB).
    // Tiny vectors in the cross group: recursive doubling, one exchange per
    // partner (halving-doubling pays two round trips per partner; 2 hosts,
    // 8 B: see docs/performance-history.md, issue 17).
    {Collective::AllReduce, Scope::MultiNode, kSingleExchangeUpTo, "hierarchical,recursive_doubling,halving_doubling,tree,ring"},
    {Collective::AllReduce, Scope::MultiNode, kSmall, "hierarchical,halving_doubling,tree,ring"},
    {Collective::AllReduce, Scope::MultiNode, kShardedUpTo, "sharded,hierarchical,ring"},
    {Collective::AllReduce, Scope::MultiNode, kAny, "hierarchical,ring,sharded,halving_doubling"},
    {Collective::AllGather, Scope::SingleNode, kStagedUpTo, "shm_direct,ring"},
    {Collective::AllGather, Scope::SingleNode, kAny, "cma,shm_direct,ring"},
    {Collective::AllGather, Scope::MultiNode, kSmall, "recursive_doubling,ring"},
    {Collective::AllGather, Scope::MultiNode, kAny, "direct,ring"},
    {Collective::ReduceScatter, Scope::SingleNode, kAny, "shm_direct,ring"},
    {Collective::ReduceScatter, Scope::MultiNode, kAny, "ring"},
    // Broadcast: from 1 MiB the single copy wins at 2 ranks (78 us against
    // 163 staged) and at 4 ranks on 2 cores (153 against 222).
    {Collective::Broadcast, Scope::SingleNode, kStagedUpTo / 2, "shm_direct,tree"},
    {Collective::Broadcast, Scope::SingleNode, kAny, "cma,shm_direct,tree"},
    {Collective::Broadcast, Scope::MultiNode, kAny, "tree"},
    {Collective::Reduce, Scope::SingleNode, kAny, "shm_direct,tree"},
    {Collective::Reduce, Scope::MultiNode, kAny, "tree"},
    // Alltoall: with a core per rank the single copy wins from 256 KiB
    // (2 ranks, 1 MiB: 43 us against 58 staged); ranks sharing cores keep
    // the staged exchange up to 2 MiB (4 ranks on 2 cores, 2 MiB: 290 us
    // against 341).
    {Collective::AllToAll, Scope::SingleNode, kStagedUpTo / 8, "shm_direct,pairwise"},
    {Collective::AllToAll, Scope::SingleNode, kAny, "cma,shm_direct,pairwise", true},
    {Collective::AllToAll, Scope::SingleNode, kStagedUpTo * 2, "shm_direct,pairwise"},
    {Collective::AllToAll, Scope::SingleNode, kAny, "cma,shm_direct,pairwise"},
    {Collective::AllToAll, Scope::MultiNode, kAny, "pairwise"},
    {Collective::Gather, Scope::SingleNode, kAny, "direct"},
    {Collective::Gather, Scope::MultiNode, kAny, "direct"},
    {Collective::Scatter, Scope::SingleNode, kAny, "direct"},
    {Collective::Scatter, Scope::MultiNode, kAny, "direct"},
    {Collective::SendRecv, Scope::SingleNode, kAny, "ring"},
    {Collective::SendRecv, Scope::MultiNode, kAny, "ring"},
    {Collective::AllToAllV, Scope::SingleNode, kAny, "pairwise"},
    {Collective::AllToAllV, Scope::MultiNode, kAny, "pairwise"},
    {Collective::Barrier, Scope::SingleNode, kAny, "shm,dissemination"},
    {Collective::Barrier, Scope::MultiNode, kAny, "dissemination"},
};

bool handles(const Algorithm& a, MemoryKind m) {
  return m == MemoryKind::Cuda ? a.info.cuda_memory : a.info.host_memory;
}

std::vector<std::string> split_names(std::string_view list) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= list.size()) {
    size_t end = list.find(',', start);
    if (end == std::string_view::npos) end = list.size();
    if (end > start) out.emplace_back(list.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

std::string env_name(Collective c) {
  std::string name = "SMDDP_ALGORITHM_";
  for (char ch : to_string(c)) name += static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
  return name;
}

}  // namespace

std::vector<SelectionRule> default_rules() {
  std::vector<SelectionRule> rules;
  for (const DefaultRule& d : kDefaults) {
    rules.push_back({d.collective, d.scope, d.max_bytes, split_names(d.candidates), d.dedicated_cores, d.memory});
  }
#if SMDDP_CUDA_ENABLED
  // Device buffers of every collective that has buffers: staged through
  // pinned host memory; the host collective inside is selected by the rows
  // above. (A barrier touches no buffer and runs as host.)
  for (Collective c : all_collectives()) {
    if (traits(c).send == Extent::None && traits(c).recv == Extent::None) continue;
    for (Scope scope : {Scope::SingleNode, Scope::MultiNode}) {
      rules.push_back({c, scope, kAny, {"cuda_staged"}, false, MemoryKind::Cuda});
    }
  }
#endif
  return rules;
}

std::vector<SelectionRule> parse_tuning(std::string_view text, std::string_view origin) {
  std::vector<SelectionRule> rules;
  std::istringstream in{std::string(text)};
  std::string line;
  int lineno = 0;
  while (std::getline(in, line)) {
    ++lineno;
    if (auto hash = line.find('#'); hash != std::string::npos) line.resize(hash);
    std::istringstream words(line);
    std::vector<std::string> fields;
    for (std::string w; words >> w;) fields.push_back(std::move(w));
    if (fields.empty()) continue;
    auto fail = [&](const std::string& why) {
      throw UsageError(std::string(origin) + ":" + std::to_string(lineno) + ": " + why);
    };
    // max_bytes is one or two words, so that a size with a blank before its
    // unit ("64 KiB") is read here as everywhere else (docs/bench.md#sizes).
    if (fields.size() < 4 || fields.size() > 5) fail("expected '<collective> <single|multi> <max_bytes|inf> <names>'");
    const std::string& coll = fields[0];
    const std::string& scope = fields[1];
    const std::string& names = fields.back();
    const std::string max = fields.size() == 5 ? fields[2] + " " + fields[3] : fields[2];
    auto c = parse_collective(coll);
    if (!c) fail("unknown collective '" + coll + "'");
    if (scope != "single" && scope != "multi") fail("scope must be single or multi, not '" + scope + "'");
    size_t max_bytes = kAny;
    if (max != "inf") {
      std::string why;
      const auto v = common::parse_size(max, &why);
      if (!v) fail("max_bytes must be inf or " + std::string(common::kSizeExamples) + ", not '" + max + "' (" + why + ")");
      max_bytes = *v;
    }
    SelectionRule rule{*c, scope == "single" ? Scope::SingleNode : Scope::MultiNode, max_bytes,
                       common::split(names, ',')};
    // "allreduce single inf ,,": a rule that names nothing (found by fuzz/tuning_file.cc).
    if (rule.candidates.empty()) fail("no algorithm named in '" + names + "'");
    for (const auto& n : rule.candidates) {
      const Algorithm* a = find_algorithm(*c, n);
      if (!a) fail("no " + coll + " algorithm named '" + n + "'");
      // A rule naming device algorithms is for device buffers.
      if (a->info.cuda_memory && !a->info.host_memory) rule.memory = MemoryKind::Cuda;
    }
    rules.push_back(std::move(rule));
  }
  return rules;
}

Selector::Selector(const std::vector<SelectionRule>& rules) {
  for (const SelectionRule& r : rules) {
    Resolved out{r.collective, r.scope, r.max_bytes, r.dedicated_cores, r.memory, {}};
    for (const auto& name : r.candidates) {
      const Algorithm* a = find_algorithm(r.collective, name);
      if (!a) {
        throw UsageError("no " + std::string(to_string(r.collective)) + " algorithm named '" + name + "'");
      }
      out.candidates.push_back(a);
    }
    rules_.push_back(std::move(out));
  }
}

Selector Selector::from_environment() {
  std::vector<SelectionRule> rules;
  if (const std::string path = config::text("SMDDP_TUNING_FILE"); !path.empty()) {
    // The bounded reader: a FIFO, device or huge file is refused, never waited on or loaded.
    std::string text;
    if (const std::string why = common::read_bounded_file(path, common::kMaxInputBytes, &text); !why.empty()) {
      throw UsageError("SMDDP_TUNING_FILE: cannot read " + path + ": " + why);
    }
    rules = parse_tuning(text, path);
  }
  for (auto& r : default_rules()) rules.push_back(std::move(r));
  Selector s(rules);
  for (Collective c : all_collectives()) {
    std::string var = env_name(c);
    if (const std::string v = config::text(var); v != "auto") {
      s.forced_[static_cast<int>(c)] = find_algorithm(c, v);
      if (!s.forced_[static_cast<int>(c)]) throw UsageError(var + "=" + v + ": no such algorithm");
    }
  }
  return s;
}

Scope scope_of(const CallShape& s) {
  if (s.group == GroupKind::Node) return Scope::SingleNode;
  if (s.group == GroupKind::Cross) return s.group_size > 1 ? Scope::MultiNode : Scope::SingleNode;
  return s.nodes > 1 ? Scope::MultiNode : Scope::SingleNode;
}

std::span<const Algorithm* const> Selector::candidates(Collective c, Scope scope, size_t bytes,
                                                       bool cores_to_spare, MemoryKind memory) const {
  for (const auto& r : rules_) {
    if (r.dedicated_cores && !cores_to_spare) continue;
    if (r.collective == c && r.scope == scope && r.memory == memory && bytes <= r.max_bytes) {
      return r.candidates;
    }
  }
  return {};
}

void check_forced(const Algorithm& a, const CallShape& shape) {
  if (shape.memory == MemoryKind::Cuda && !a.info.cuda_memory) {
    throw UsageError(std::string(a.info.name) + " runs on host memory only; device buffers need a " +
                     "CUDA algorithm (cuda_staged)");
  }
  if (const char* why = a.accepts(shape)) {
    throw UsageError(std::string(a.info.name) + " cannot run this " +
                     std::string(to_string(shape.collective)) + ": " + why);
  }
}

const Algorithm& Selector::choose(const CallShape& shape, std::string_view forced) const {
  if (!forced.empty() && forced != "auto") {
    const Algorithm* a = find_algorithm(shape.collective, forced);
    if (!a) {
      throw UsageError("no " + std::string(to_string(shape.collective)) + " algorithm named '" +
                       std::string(forced) + "'");
    }
    check_forced(*a, shape);
    return *a;
  }
  // SMDDP_ALGORITHM_<COLL> applies to the caller's collective, not to the
  // node and cross-node steps an algorithm runs inside it, and only to
  // buffers of the memory it handles.
  if (const Algorithm* env = forced_[static_cast<int>(shape.collective)];
      env && shape.group == GroupKind::World && handles(*env, shape.memory)) {
    check_forced(*env, shape);
    return *env;
  }
  std::string first_reason;  // why the first candidate declined, for the error
  auto take = [&](const Algorithm& a) {
    const char* why = a.accepts(shape);
    if (why && first_reason.empty()) first_reason = std::string(a.info.name) + ": " + why;
    return why == nullptr;
  };
  for (const Algorithm* a : candidates(shape.collective, scope_of(shape), shape.bytes, shape.dedicated_cores, shape.memory)) {
    if (take(*a)) return *a;
  }
  // Any registered algorithm that accepts, so a gap in the table is not fatal.
  for (const Algorithm& a : algorithm_registry()) {
    if (a.info.collective == shape.collective && handles(a, shape.memory) && take(a)) return a;
  }
  throw UsageError("no algorithm can run this " + std::string(to_string(shape.collective)) +
                   (first_reason.empty() ? "" : " (" + first_reason + ")"));
}

}  // namespace smddp
