// Where a hung job stands. Every rank publishes its progress (the number,
// collective and size of its current call) into a small record of a private
// shared-memory segment of its host, with relaxed atomic stores: a rank
// stopped or stuck inside a collective still shows what it last published.
// On a timeout (the engine's deadline, the watchdog) or on SIGUSR1, the first
// rank of each host reads its host's records (with each process's state
// from /proc). On a job of several hosts the first ranks of the other hosts
// send theirs to rank 0 through the out-of-band channel of
// hang_report_channel.h (opened at attach, over the bootstrap; it works while
// the collectives are stuck); rank 0 waits a bounded time for them and
// prints one report for the whole job, naming who is behind and which hosts
// did not answer:
//   rank 5 on host X finished allreduce #1233 and has not started #1234
//   (process stopped); the 7 others wait in allreduce #1234
//   no report from host Y within 2 s (its first rank is stopped, gone or
//   not reporting)
// Rank 0's report also goes into the -J document ("hang"). A host whose
// first rank cannot reach rank 0 prints its own host's report instead
// (docs/diag.md, "Hang location").
#pragma once

#include <nlohmann/json_fwd.hpp>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "smddp/communicator.h"

namespace smddp::bench {

struct HangRank {
  int rank = 0;
  std::string host;
  uint64_t sequence = 0;  // calls started, from 1 (0: none yet)
  bool in_call = false;   // inside call #sequence; false: finished it
  std::string collective;
  size_t bytes = 0;
  std::string process;  // "running", "stopped", "gone", ... (from /proc)
  bool behind = false;
};

struct HangReport {
  std::string trigger;  // "timeout", "signal"
  std::string host;     // who read the records (rank 0's host for the job's report)
  std::vector<HangRank> ranks;                // of `host`, and of every host that answered
  std::vector<std::string> hosts;             // the hosts whose records are in
  std::vector<std::string> hosts_missing;     // rank 0: the other hosts that sent none in time
  bool whole_job = false;                     // rank 0 with the channel: hosts + hosts_missing are all
  bool forwarded = false;                     // another host's first rank: sent to rank 0, nothing to print
  std::vector<std::string> lines;  // what rank 0 (or the host's first rank) prints
};

class HangChannel;

class ProgressBoard {
 public:
  static ProgressBoard& instance();
  // Collective over `comm`: maps this host's segment (created by the host's
  // first rank, unlinked as soon as every rank of the host has mapped it, so
  // nothing outlives the job). On failure the board stays off.
  void attach(Communicator& comm);
  // Called on every call: starts call #n+1 of `collective` (the test hook
  // SMDDP_TEST_STALL_AT=RANK:N stops RANK before call #N), then ends it.
  void enter(Collective collective, size_t bytes);
  void leave();
  // The first rank of this host (rank 0 for its host) reports.
  bool reports() const { return attached_ && reporter_; }
  int rank() const { return rank_; }
  // This host's records; rank 0 adds those the other hosts send within a
  // bounded wait, the other hosts' first ranks send theirs (forwarded).
  HangReport read(const std::string& trigger) const;
  // About to end on a timeout. Rank 0, its report written: says so on the
  // board. The others give rank 0, which times out at about the same time,
  // the moment to write it before the launcher tears the job down: on rank
  // 0's host until it says so (bounded), from other hosts a fixed wait.
  void let_rank0_report() const;

 private:
  struct Record;
  Record* records_ = nullptr;  // by world rank
  size_t bytes_ = 0;
  bool attached_ = false, reporter_ = false;
  int rank_ = 0;
  std::vector<std::string> hosts_;
  std::shared_ptr<HangChannel> channel_;  // between hosts; null on one host
  uint64_t sequence_ = 0;
  long long stall_rank_ = -1;
  uint64_t stall_at_ = 0;
};

// Prints the report's lines on stderr ("smddp-bench: hang: ...").
void print_hang_report(const HangReport& report);
nlohmann::json hang_to_json(const HangReport& report);
// SMDDP_TEST_STALL_AT's check (RANK:CALL), registered before the table is checked.
void register_stall_check();

}  // namespace smddp::bench
