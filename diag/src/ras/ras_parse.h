// Readers of what NCCL's RAS service answers on its client port (NCCL
// src/ras/client_support.cc; docs/userguide troubleshooting/ras.rst):
//   STATUS in JSON (SET FORMAT json, NCCL 2.28.7+): communicators with
//     their ranks, missing ranks (unresponsive, considered_dead), rank
//     status (init_state, async_error, abort_flag) and collective counts;
//   STATUS in text (every version): the communicator group table and the
//     DEAD / INCOMPLETE blocks with "Process P on node H managing GPU G";
//   MONITOR events (NCCL 2.29+): "[time] PEER_DEAD: Process ... " lines or
//     one JSON object per event {timestamp, group, event, peer{host, pid,
//     cuda_devs, nvml_devs} or peer{addr}, details}.
// They turn into failures with our codes (ras_codes.h). Pure functions of
// text; the client (ras_client.h) moves the bytes.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ras/ras_codes.h"

namespace smddp::diag {

struct RasPeer {
  std::string host;  // "" when unknown
  int64_t pid = -1;
  std::vector<int> gpus;
  std::string text() const;  // "process 12 on node h managing GPU 1" (what is known)
};

struct RasFailure {
  RasFailureKind kind;
  RasPeer peer;
  std::string comm;  // communicator hash, when known
  int64_t rank = -1;
  std::string detail;
  std::string text() const;  // "SMDDP-RAS-PEER-DEAD (replace): process ... dead"
};

// Appends the failures of `more` that `into` does not hold yet: one per
// (code, process), whichever source (status, stuck ranks, events) saw it first.
void merge_failures(std::vector<RasFailure>& into, const std::vector<RasFailure>& more);

struct RasRankCount {
  uint64_t operations = 0;  // all collective counts of the rank, summed
  RasPeer peer;
};

struct RasStatus {
  bool json = false;
  std::string nccl_version;  // JSON only
  int64_t communicators = 0, ranks = 0, missing_ranks = 0, timeouts = 0;
  std::vector<RasFailure> failures;  // one per (code, process)
  // communicator hash -> rank -> count (JSON only), for stuck_ranks().
  std::map<std::string, std::map<int64_t, RasRankCount>> counts;
};

// Throw smddp::Error with what is wrong (not JSON, too deep, a member of the
// wrong type, ...). At most 64 MiB; nesting beyond 64 levels is refused.
RasStatus parse_ras_status_json(std::string_view text);
RasStatus parse_ras_status_text(std::string_view text);

// Ranks whose collective count stayed the same from `before` to `after`
// while another rank of the same communicator is ahead: SMDDP-RAS-RANK-STUCK.
std::vector<RasFailure> stuck_ranks(const RasStatus& before, const RasStatus& after);

struct RasEvent {
  std::string timestamp, group, event, details;
  RasPeer peer;
  std::string addr;  // a peer RAS knows only by address
};

// "[2025-12-19 13:07:07] PEER_DEAD: Process 1 on node h managing GPU 1";
// nullopt for another line (the monitor's banner, a blank line).
std::optional<RasEvent> parse_ras_event_text(std::string_view line);
// One JSON event object; throws smddp::Error when it is not one.
RasEvent parse_ras_event_json(std::string_view text);
// PEER_DEAD -> SMDDP-RAS-PEER-DEAD; other events are no failure.
std::optional<RasFailure> failure_for_event(const RasEvent& event);

// Cuts the monitor stream into items: a line, or a whole JSON object (the
// JSON events span several lines). Throws smddp::Error when an item grows
// past 1 MiB without ending.
class RasStreamSplitter {
 public:
  void feed(std::string_view bytes) { buffer_.append(bytes); }
  std::optional<std::string> next();

 private:
  std::string buffer_;
};

// "Process 3487984 on node 172.16.64.213 managing GPU 5" (also "GPUs 1,2",
// a trailing text) -> the peer; nullopt without "Process N".
std::optional<RasPeer> parse_ras_peer_text(std::string_view text);

}  // namespace smddp::diag
