#include "algorithms/selector.h"

#include <limits>
#include <sstream>

#include "algorithms/model_table.h"
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

// Sources of the data rows, named by --explain. The single-node rows are
// measurements (the cost model does not know how ranks share cores); the
// multi-node rows are the fallback for when there is no model (a selector
// built without a job: schedule::make's "auto", unit tests). A job across
// nodes ranks its multi-node algorithms with the model instead
// (algorithms/model_table.h).
constexpr const char* kMeasuredShm =
    "measured rows (selector.cc): shm_direct and cma on 2-4 ranks of one host, docs/performance-history.md";
constexpr const char* kFallbackNet =
    "fallback rows (selector.cc): issue 17's measurements on 2-4 hosts x 1-2 ranks, docs/performance-history.md";
constexpr const char* kOnly = "the only algorithm (selector.cc)";

struct DefaultRule {
  Collective collective;
  Scope scope;
  size_t max_bytes;
  const char* candidates;
  bool dedicated_cores = false;
  MemoryKind memory = MemoryKind::Host;
  const char* source = kOnly;
};

// The data rows. Rows are tried top-down; the first row of the collective
// and scope whose max_bytes covers the call gives the order.
constexpr DefaultRule kDefaults[] = {
    // Single-copy allreduce pays off from 1 MiB when every rank has its core
    // (2 ranks, 8 MiB: 9.0 GB/s against 4.0 staged; 1 MiB: 140 us against
    // 182); with ranks sharing cores its two long phases lose to the staged
    // pipeline up to ~64 MiB.
    {Collective::AllReduce, Scope::SingleNode, 512 << 10, "shm_direct,halving_doubling,ring", false, MemoryKind::Host, kMeasuredShm},
    {Collective::AllReduce, Scope::SingleNode, kAny, "cma,shm_direct,halving_doubling,ring", true, MemoryKind::Host, kMeasuredShm},
    {Collective::AllReduce, Scope::SingleNode, 1 << 20, "shm_direct,halving_doubling,ring", false, MemoryKind::Host, kMeasuredShm},
    {Collective::AllReduce, Scope::SingleNode, kAny, "shm_direct,halving_doubling,ring", false, MemoryKind::Host, kMeasuredShm},
    // Fallback across nodes: hierarchical, with one whole-vector exchange per
    // partner in its cross group up to 32 KiB (0.69-0.90x halving-doubling's
    // time there), the sharded exchange at 64 KiB-1 MiB, hierarchical with
    // the ring in its cross group above.
    {Collective::AllReduce, Scope::MultiNode, 32 << 10, "hierarchical,recursive_doubling,halving_doubling,tree,ring", false, MemoryKind::Host, kFallbackNet},
    {Collective::AllReduce, Scope::MultiNode, 64 << 10, "hierarchical,halving_doubling,tree,ring", false, MemoryKind::Host, kFallbackNet},
    {Collective::AllReduce, Scope::MultiNode, 1 << 20, "sharded,hierarchical,ring", false, MemoryKind::Host, kFallbackNet},
    {Collective::AllReduce, Scope::MultiNode, kAny, "hierarchical,ring,sharded,halving_doubling", false, MemoryKind::Host, kFallbackNet},
    {Collective::AllGather, Scope::SingleNode, 1 << 20, "shm_direct,ring", false, MemoryKind::Host, kMeasuredShm},
    {Collective::AllGather, Scope::SingleNode, kAny, "cma,shm_direct,ring", false, MemoryKind::Host, kMeasuredShm},
    {Collective::AllGather, Scope::MultiNode, 64 << 10, "recursive_doubling,ring", false, MemoryKind::Host, kFallbackNet},
    {Collective::AllGather, Scope::MultiNode, kAny, "direct,ring", false, MemoryKind::Host, kFallbackNet},
    {Collective::ReduceScatter, Scope::SingleNode, kAny, "shm_direct,ring", false, MemoryKind::Host, kMeasuredShm},
    {Collective::ReduceScatter, Scope::MultiNode, kAny, "ring"},
    // Broadcast: from 1 MiB the single copy wins at 2 ranks (78 us against
    // 163 staged) and at 4 ranks on 2 cores (153 against 222).
    {Collective::Broadcast, Scope::SingleNode, 512 << 10, "shm_direct,tree", false, MemoryKind::Host, kMeasuredShm},
    {Collective::Broadcast, Scope::SingleNode, kAny, "cma,shm_direct,tree", false, MemoryKind::Host, kMeasuredShm},
    {Collective::Broadcast, Scope::MultiNode, kAny, "tree"},
    {Collective::Reduce, Scope::SingleNode, kAny, "shm_direct,tree", false, MemoryKind::Host, kMeasuredShm},
    {Collective::Reduce, Scope::MultiNode, kAny, "tree"},
    // Alltoall: with a core per rank the single copy wins from 256 KiB
    // (2 ranks, 1 MiB: 43 us against 58 staged); ranks sharing cores keep
    // the staged exchange up to 2 MiB (4 ranks on 2 cores, 2 MiB: 290 us
    // against 341).
    {Collective::AllToAll, Scope::SingleNode, 128 << 10, "shm_direct,pairwise", false, MemoryKind::Host, kMeasuredShm},
    {Collective::AllToAll, Scope::SingleNode, kAny, "cma,shm_direct,pairwise", true, MemoryKind::Host, kMeasuredShm},
    {Collective::AllToAll, Scope::SingleNode, 2 << 20, "shm_direct,pairwise", false, MemoryKind::Host, kMeasuredShm},
    {Collective::AllToAll, Scope::SingleNode, kAny, "cma,shm_direct,pairwise", false, MemoryKind::Host, kMeasuredShm},
    {Collective::AllToAll, Scope::MultiNode, kAny, "pairwise"},
    {Collective::Gather, Scope::SingleNode, kAny, "direct"},
    {Collective::Gather, Scope::MultiNode, kAny, "direct"},
    {Collective::Scatter, Scope::SingleNode, kAny, "direct"},
    {Collective::Scatter, Scope::MultiNode, kAny, "direct"},
    {Collective::SendRecv, Scope::SingleNode, kAny, "ring"},
    {Collective::SendRecv, Scope::MultiNode, kAny, "ring"},
    {Collective::AllToAllV, Scope::SingleNode, kAny, "pairwise"},
    {Collective::AllToAllV, Scope::MultiNode, kAny, "pairwise"},
    {Collective::Barrier, Scope::SingleNode, kAny, "shm,dissemination", false, MemoryKind::Host, kMeasuredShm},
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
    SelectionRule r{d.collective, d.scope, d.max_bytes, split_names(d.candidates), d.dedicated_cores, d.memory};
    r.source = d.source;
    rules.push_back(std::move(r));
  }
#if SMDDP_CUDA_ENABLED
  // Device buffers of every collective that has buffers: staged through
  // pinned host memory; the host collective inside is selected by the rows
  // above. (A barrier touches no buffer and runs as host.)
  for (Collective c : all_collectives()) {
    if (traits(c).send == Extent::None && traits(c).recv == Extent::None) continue;
    for (Scope scope : {Scope::SingleNode, Scope::MultiNode}) {
      SelectionRule r{c, scope, kAny, {"cuda_staged"}, false, MemoryKind::Cuda};
      r.source = "device buffers (selector.cc)";
      rules.push_back(std::move(r));
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
    rule.source = "SMDDP_TUNING_FILE " + std::string(origin) + ":" + std::to_string(lineno);
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

Selector::Selector(const std::vector<SelectionRule>& rules) : rules_source_(rules) {
  for (size_t i = 0; i < rules.size(); ++i) {
    const SelectionRule& r = rules[i];
    Resolved out{r.collective, r.scope, r.max_bytes, r.dedicated_cores, r.memory, r.group, {}, i};
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

namespace {

std::vector<SelectionRule> tuning_rules() {
  const std::string path = config::text("SMDDP_TUNING_FILE");
  if (path.empty()) return {};
  // The bounded reader: a FIFO, device or huge file is refused, never waited on or loaded.
  std::string text;
  if (const std::string why = common::read_bounded_file(path, common::kMaxInputBytes, &text); !why.empty()) {
    throw UsageError("SMDDP_TUNING_FILE: cannot read " + path + ": " + why);
  }
  return parse_tuning(text, path);
}

}  // namespace

Selector Selector::from_environment() {
  std::vector<SelectionRule> rules = tuning_rules();
  for (auto& r : default_rules()) rules.push_back(std::move(r));
  Selector s(rules);
  s.force_from_environment();
  return s;
}

Selector Selector::from_environment(const JobShape& job) {
  const std::vector<SelectionRule> front = tuning_rules(), back = default_rules();
  std::vector<SelectionRule> rules = front;
  model_table::Ranked ranked;
  if (job.hosts > 1) {
    ranked = model_table::rank(model_table::parameters(job), job, front, back);
    for (auto& r : ranked.rules) rules.push_back(std::move(r));
  }
  for (const auto& r : back) rules.push_back(r);
  Selector s(rules);
  s.parameters_ = ranked.parameters;
  s.modelled_hosts_ = ranked.scale.topology.hosts;
  s.modelled_ranks_per_host_ = ranked.scale.topology.ranks_per_host;
  s.ranked_on_ = ranked.scale.text();
  s.force_from_environment();
  return s;
}

void Selector::force_from_environment() {
  for (Collective c : all_collectives()) {
    std::string var = env_name(c);
    if (const std::string v = config::text(var); v != "auto") {
      forced_[static_cast<int>(c)] = find_algorithm(c, v);
      if (!forced_[static_cast<int>(c)]) throw UsageError(var + "=" + v + ": no such algorithm");
      forced_var_[static_cast<int>(c)] = var + "=" + v;
    }
  }
}

Scope scope_of(const CallShape& s) {
  if (s.group == GroupKind::Node) return Scope::SingleNode;
  if (s.group == GroupKind::Cross) return s.group_size > 1 ? Scope::MultiNode : Scope::SingleNode;
  return s.nodes > 1 ? Scope::MultiNode : Scope::SingleNode;
}

std::span<const Algorithm* const> Selector::candidates(Collective c, Scope scope, size_t bytes,
                                                       bool cores_to_spare, MemoryKind memory,
                                                       GroupKind group) const {
  for (const auto& r : rules_) {
    if (r.dedicated_cores && !cores_to_spare) continue;
    if (r.group && *r.group != group) continue;
    if (r.collective == c && r.scope == scope && r.memory == memory && bytes <= r.max_bytes) {
      return r.candidates;
    }
  }
  return {};
}

SelectionTable Selector::table(const JobShape& job) const {
  SelectionTable t;
  t.parameters = parameters_;
  t.hosts = job.hosts;
  t.ranks_per_host = job.ranks_per_host;
  t.modelled_hosts = modelled_hosts_;
  t.modelled_ranks_per_host = modelled_ranks_per_host_;
  t.ranked_on = ranked_on_;
  t.transport = job.transport;
  for (Collective c : all_collectives()) {
    if (!forced_var_[static_cast<int>(c)].empty()) t.forced.push_back(forced_var_[static_cast<int>(c)]);
  }
  // The groups a host call of the job runs on: the world; across nodes also
  // each node's ranks and the cross-node groups (inside hierarchical, sharded).
  std::vector<std::pair<GroupKind, Scope>> groups;
  if (job.hosts > 1) {
    groups = {{GroupKind::World, Scope::MultiNode}, {GroupKind::Cross, Scope::MultiNode}};
    if (job.ranks_per_host > 1) groups.emplace_back(GroupKind::Node, Scope::SingleNode);
  } else {
    groups = {{GroupKind::World, Scope::SingleNode}};
  }
  for (Collective c : all_collectives()) {
    for (const auto& [group, scope] : groups) {
      // The cross-node groups run what hierarchical and sharded nest there.
      if (group == GroupKind::Cross && !model_table::runs_on_cross(c)) continue;
      if (group == GroupKind::Node && !model_table::runs_on_node(c)) continue;
      // First-match semantics: a rule covers the sizes above those of the
      // rules before it, up to its own bound.
      size_t lo = 0;
      for (const auto& r : rules_) {
        if (r.collective != c || r.scope != scope || r.memory != MemoryKind::Host) continue;
        if ((r.dedicated_cores && !job.dedicated_cores) || (r.group && *r.group != group)) continue;
        if (r.max_bytes < lo) continue;
        const SelectionRule& src = rules_source_[r.rule];
        SelectionRange range;
        range.collective = c;
        range.group = group == GroupKind::World ? "world" : group == GroupKind::Cross ? "cross" : "node";
        range.min_bytes = lo;
        range.max_bytes = r.max_bytes;
        for (const Algorithm* a : r.candidates) range.candidates.emplace_back(a->info.name);
        if (!src.predicted_us.empty()) range.predicted_us = src.predicted_us[0];
        if (src.predicted_us.size() > 1) range.runner_up_us = src.predicted_us[1];
        range.at_bytes = src.at_bytes;
        range.source = src.source;
        t.ranges.push_back(std::move(range));
        if (r.max_bytes == kAny) break;
        lo = r.max_bytes + 1;
      }
    }
  }
  return t;
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
  for (const Algorithm* a :
       candidates(shape.collective, scope_of(shape), shape.bytes, shape.dedicated_cores, shape.memory, shape.group)) {
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
