#include "ras/ras_parse.h"

#include <nlohmann/json.hpp>

#include <set>
#include <tuple>

#include "shared/text.h"
#include "smddp/error.h"

namespace smddp::diag {
namespace {

constexpr size_t kMaxStatusBytes = size_t{64} << 20;
constexpr size_t kMaxItemBytes = size_t{1} << 20;
constexpr int kMaxDepth = 64;

using nlohmann::json;

json parse_json(std::string_view text, const char* what) {
  if (text.size() > kMaxStatusBytes) throw Error(std::string(what) + " larger than 64 MiB");
  if (!json_depth_within(text, kMaxDepth)) throw Error(std::string(what) + " nested deeper than 64 levels");
  json j = json::parse(text, nullptr, false);
  if (j.is_discarded()) throw Error(std::string(what) + " is not JSON");
  if (!j.is_object()) throw Error(std::string(what) + " is not a JSON object");
  return j;
}

// Optional members: absent is the default, a wrong type is an error.
int64_t int_member(const json& obj, const char* key, int64_t fallback = 0) {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return fallback;
  if (!it->is_number_integer()) throw Error(std::string("\"") + key + "\" is not an integer");
  return it->get<int64_t>();
}

bool bool_member(const json& obj, const char* key) {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return false;
  if (!it->is_boolean()) throw Error(std::string("\"") + key + "\" is not true or false");
  return it->get<bool>();
}

std::string string_member(const json& obj, const char* key) {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return "";
  if (!it->is_string()) throw Error(std::string("\"") + key + "\" is not a string");
  return it->get<std::string>();
}

const json& array_member(const json& obj, const char* key) {
  static const json empty = json::array();
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return empty;
  if (!it->is_array()) throw Error(std::string("\"") + key + "\" is not an array");
  return *it;
}

const json& object_member(const json& obj, const char* key) {
  static const json empty = json::object();
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return empty;
  if (!it->is_object()) throw Error(std::string("\"") + key + "\" is not an object");
  return *it;
}

RasPeer rank_peer(const json& rank) {
  RasPeer p;
  p.host = string_member(rank, "host");
  if (p.host == "unknown") p.host.clear();
  p.pid = int_member(rank, "pid", -1);
  const int64_t gpu = int_member(rank, "nvml_dev", int_member(rank, "cuda_dev", -1));
  if (gpu >= 0) p.gpus.push_back(static_cast<int>(gpu));
  return p;
}

// One failure per (code, process): a dead process is missing from every
// communicator it was in.
void add_failure(RasStatus& status, RasFailure f) {
  for (const auto& g : status.failures) {
    if (g.kind == f.kind && g.peer.host == f.peer.host && g.peer.pid == f.peer.pid &&
        (f.peer.pid >= 0 || !f.peer.host.empty() || g.comm == f.comm)) {
      return;
    }
  }
  status.failures.push_back(std::move(f));
}

bool starts_with(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }

std::vector<std::string_view> lines_of(std::string_view text) {
  std::vector<std::string_view> out;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    out.push_back(common::trim_end(text.substr(start, end - start)));
    start = end + 1;
  }
  return out;
}

}  // namespace

std::string RasPeer::text() const {
  std::string out = pid >= 0 ? "process " + std::to_string(pid) : "a process";
  if (!host.empty()) out += " on node " + host;
  if (!gpus.empty()) {
    std::vector<std::string> g;
    for (int d : gpus) g.push_back(std::to_string(d));
    out += std::string(" managing GPU") + (gpus.size() > 1 ? "s " : " ") + join(g, ",");
  }
  return out;
}

std::string RasFailure::text() const {
  const RasCode& c = ras_code(kind);
  std::string out = std::string(c.code) + " (" + std::string(c.action) + "): " + peer.text();
  if (rank >= 0) out += ", rank " + std::to_string(rank);
  if (!comm.empty()) out += " of communicator " + comm;
  if (!detail.empty()) out += ": " + detail;
  return out;
}

void merge_failures(std::vector<RasFailure>& into, const std::vector<RasFailure>& more) {
  for (const auto& f : more) {
    bool known = false;
    for (const auto& g : into) {
      known = known || (g.kind == f.kind && g.peer.host == f.peer.host && g.peer.pid == f.peer.pid &&
                        (f.peer.pid >= 0 || g.rank == f.rank));
    }
    if (!known) into.push_back(f);
  }
}

std::optional<RasPeer> parse_ras_peer_text(std::string_view text) {
  text = trim(text);
  if (!starts_with(common::to_lower(text.substr(0, 8)), "process ")) return std::nullopt;
  RasPeer p;
  size_t i = 8, j = i;
  while (j < text.size() && std::isdigit(static_cast<unsigned char>(text[j]))) ++j;
  auto pid = parse_int(text.substr(i, j - i));
  if (!pid) return std::nullopt;
  p.pid = *pid;
  std::string_view rest = text.substr(j);
  if (starts_with(rest, " on node ")) {
    rest.remove_prefix(9);
    const size_t sp = rest.find(' ');
    p.host = std::string(rest.substr(0, sp));
    rest = sp == std::string_view::npos ? std::string_view() : rest.substr(sp);
  }
  for (std::string_view key : {" managing GPUs ", " managing GPU "}) {
    if (!starts_with(rest, key)) continue;
    rest.remove_prefix(key.size());
    size_t k = 0;
    while (k < rest.size() && (std::isdigit(static_cast<unsigned char>(rest[k])) || rest[k] == ',')) ++k;
    for (const auto& g : split(rest.substr(0, k), ',')) {
      if (auto v = parse_int(g)) p.gpus.push_back(static_cast<int>(*v));
    }
    break;
  }
  return p;
}

RasStatus parse_ras_status_json(std::string_view text) {
  const json j = parse_json(text, "the RAS status");
  RasStatus s;
  s.json = true;
  s.nccl_version = string_member(j, "nccl_version");
  const json& comms = array_member(j, "communicators");
  s.communicators = static_cast<int64_t>(comms.size());
  for (const json& c : comms) {
    if (!c.is_object()) throw Error("a communicator is not an object");
    const std::string hash = string_member(c, "hash");
    s.ranks += int_member(c, "size");
    auto& counts = s.counts[hash];
    for (const json& r : array_member(c, "ranks")) {
      if (!r.is_object()) throw Error("a rank is not an object");
      RasRankCount rc;
      rc.peer = rank_peer(r);
      for (const auto& [name, v] : object_member(r, "collective_counts").items()) {
        if (!v.is_number_unsigned() && !v.is_number_integer()) throw Error("collective count \"" + name + "\" is not a count");
        rc.operations += static_cast<uint64_t>(std::max<int64_t>(0, v.get<int64_t>()));
      }
      const int64_t rank = int_member(r, "rank", -1);
      const json& st = object_member(r, "status");
      const int64_t init = int_member(st, "init_state"), async = int_member(st, "async_error");
      std::string why;
      if (async != 0) why = "async_error " + std::to_string(async);
      else if (init != 0 && init != 7) why = "init_state " + std::to_string(init);  // 7: ncclInProgress
      else if (bool_member(st, "abort_flag")) why = "aborted";
      if (!why.empty()) add_failure(s, RasFailure{RasFailureKind::CommError, rc.peer, hash, rank, why});
      counts[rank] = std::move(rc);
    }
    for (const json& m : array_member(c, "missing_ranks")) {
      if (!m.is_object()) throw Error("a missing rank is not an object");
      ++s.missing_ranks;
      const json& st = object_member(m, "status");
      const bool dead = bool_member(st, "considered_dead"), unresponsive = bool_member(st, "unresponsive");
      if (!dead && !unresponsive) continue;  // between init and teardown: not a failure
      add_failure(s, RasFailure{dead ? RasFailureKind::PeerDead : RasFailureKind::PeerUnresponsive, rank_peer(m), hash,
                                int_member(m, "rank", -1), dead ? "considered dead" : "unresponsive"});
    }
  }
  s.timeouts = int_member(object_member(j, "ras"), "timeouts_count");
  // A process that is dead is not also reported as unresponsive.
  std::set<std::pair<std::string, int64_t>> dead;
  for (const auto& f : s.failures) {
    if (f.kind == RasFailureKind::PeerDead) dead.insert({f.peer.host, f.peer.pid});
  }
  std::erase_if(s.failures, [&](const RasFailure& f) {
    return f.kind == RasFailureKind::PeerUnresponsive && dead.count({f.peer.host, f.peer.pid});
  });
  return s;
}

RasStatus parse_ras_status_text(std::string_view text) {
  if (text.size() > kMaxStatusBytes) throw Error("the RAS status larger than 64 MiB");
  RasStatus s;
  const auto lines = lines_of(text);
  bool table = false;
  std::string block;  // the Errors/Warnings block a line belongs to: DEAD, INCOMPLETE, ...
  for (size_t i = 0; i < lines.size(); ++i) {
    const std::string_view line = lines[i];
    const std::string_view t = trim(line);
    if (starts_with(t, "Group ") && t.find("Comms") != std::string_view::npos) {
      table = true;
      ++i;  // the header's second line
      continue;
    }
    if (table) {
      // "   0   8   4   1   4   32   RUNNING   OK": group, comms, nodes, ranks/node, ranks/comm, ranks, status, errors.
      const auto cols = split(std::string(t), ' ');
      if (cols.size() >= 8 && parse_int(cols[0]) && parse_int(cols[1]) && parse_int(cols[5])) {
        s.communicators += *parse_int(cols[1]);
        s.ranks += *parse_int(cols[5]);
        if (cols[7].find("ERROR") != std::string::npos) {
          add_failure(s, RasFailure{RasFailureKind::CommError, {}, "group " + cols[0], -1, "status " + cols[6] + ", " + cols[7]});
        }
        continue;
      }
      table = false;
    }
    if (line.empty()) {
      block.clear();
      continue;
    }
    if (!std::isspace(static_cast<unsigned char>(line[0])) && t.find(' ') == std::string_view::npos) {
      block = std::string(t);  // "DEAD", "INCOMPLETE", "TIMEOUT", "Errors", ...
      continue;
    }
    if (block == "DEAD" || block == "INCOMPLETE") {
      if (auto peer = parse_ras_peer_text(t)) {
        const bool dead = block == "DEAD";
        if (!dead) ++s.missing_ranks;
        add_failure(s, RasFailure{dead ? RasFailureKind::PeerDead : RasFailureKind::PeerUnresponsive, *peer, "", -1,
                                  dead ? "considered dead" : "missing from the status"});
      }
    }
  }
  std::set<std::pair<std::string, int64_t>> dead;
  for (const auto& f : s.failures) {
    if (f.kind == RasFailureKind::PeerDead) dead.insert({f.peer.host, f.peer.pid});
  }
  std::erase_if(s.failures, [&](const RasFailure& f) {
    return f.kind == RasFailureKind::PeerUnresponsive && dead.count({f.peer.host, f.peer.pid});
  });
  return s;
}

std::vector<RasFailure> stuck_ranks(const RasStatus& before, const RasStatus& after) {
  std::vector<RasFailure> out;
  for (const auto& [hash, ranks] : after.counts) {
    auto prev = before.counts.find(hash);
    if (prev == before.counts.end() || ranks.size() < 2) continue;
    uint64_t most = 0;
    for (const auto& [rank, rc] : ranks) most = std::max(most, rc.operations);
    for (const auto& [rank, rc] : ranks) {
      auto was = prev->second.find(rank);
      if (was == prev->second.end() || was->second.operations != rc.operations || rc.operations >= most) continue;
      out.push_back(RasFailure{RasFailureKind::RankStuck, rc.peer, hash, rank,
                               "at collective " + std::to_string(rc.operations) + " while others are at " + std::to_string(most)});
    }
  }
  return out;
}

std::optional<RasEvent> parse_ras_event_text(std::string_view line) {
  line = trim(line);
  if (line.empty() || line.front() != '[') return std::nullopt;
  const size_t close = line.find("] ");
  if (close == std::string_view::npos) return std::nullopt;
  RasEvent e;
  e.timestamp = std::string(line.substr(1, close - 1));
  std::string_view rest = line.substr(close + 2);
  const size_t colon = rest.find(':');
  if (colon == std::string_view::npos || colon == 0) return std::nullopt;
  e.event = std::string(rest.substr(0, colon));
  for (char c : e.event) {
    if (!std::isupper(static_cast<unsigned char>(c)) && !std::isdigit(static_cast<unsigned char>(c)) && c != '_') return std::nullopt;
  }
  rest = trim(rest.substr(colon + 1));
  if (auto peer = parse_ras_peer_text(rest)) {
    e.peer = *peer;
  } else {
    const size_t sp = rest.find(' ');
    e.addr = std::string(rest.substr(0, sp));
    if (sp != std::string_view::npos) e.details = std::string(trim(rest.substr(sp)));
  }
  return e;
}

RasEvent parse_ras_event_json(std::string_view text) {
  const json j = parse_json(text, "a RAS event");
  RasEvent e;
  e.timestamp = string_member(j, "timestamp");
  e.group = string_member(j, "group");
  e.event = string_member(j, "event");
  e.details = string_member(j, "details");
  if (e.event.empty()) throw Error("a RAS event without \"event\"");
  const json& peer = object_member(j, "peer");
  e.peer.host = string_member(peer, "host");
  e.peer.pid = int_member(peer, "pid", -1);
  for (const json& d : array_member(peer, "nvml_devs")) {
    if (!d.is_number_integer()) throw Error("\"nvml_devs\" holds something that is not a device number");
    e.peer.gpus.push_back(d.get<int>());
  }
  e.addr = string_member(peer, "addr");
  return e;
}

std::optional<RasFailure> failure_for_event(const RasEvent& event) {
  if (event.event != "PEER_DEAD") return std::nullopt;
  RasFailure f{RasFailureKind::PeerDead, event.peer, "", -1, "PEER_DEAD at " + event.timestamp};
  if (f.peer.host.empty() && f.peer.pid < 0) f.peer.host = event.addr;
  return f;
}

std::optional<std::string> RasStreamSplitter::next() {
  size_t start = 0;
  while (start < buffer_.size() && std::isspace(static_cast<unsigned char>(buffer_[start]))) ++start;
  buffer_.erase(0, start);
  if (buffer_.empty()) return std::nullopt;
  size_t end = std::string::npos;
  if (buffer_[0] == '{') {
    int depth = 0;
    bool in_string = false, escaped = false;
    for (size_t i = 0; i < buffer_.size(); ++i) {
      const char c = buffer_[i];
      if (in_string) {
        if (escaped) escaped = false;
        else if (c == '\\') escaped = true;
        else if (c == '"') in_string = false;
      } else if (c == '"') {
        in_string = true;
      } else if (c == '{' || c == '[') {
        ++depth;
      } else if ((c == '}' || c == ']') && --depth == 0) {
        end = i + 1;
        break;
      }
    }
  } else {
    const size_t nl = buffer_.find('\n');
    if (nl != std::string::npos) end = nl + 1;
  }
  if (end == std::string::npos) {
    if (buffer_.size() > kMaxItemBytes) throw Error("a RAS monitor item longer than 1 MiB");
    return std::nullopt;
  }
  std::string item = buffer_.substr(0, end);
  buffer_.erase(0, end);
  return item;
}

}  // namespace smddp::diag
