#include "supervision/hang_report.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <set>
#include <thread>

#include "supervision/hang_report_channel.h"
#include "smddp/common/crypto.h"
#include "smddp/config.h"
#include "smddp/error.h"

namespace smddp::bench {

// One rank's progress, alone on its cache line. Written only by its rank.
struct alignas(64) ProgressBoard::Record {
  std::atomic<uint64_t> sequence;
  std::atomic<uint64_t> bytes;
  std::atomic<uint32_t> collective;
  std::atomic<uint32_t> in_call;
  std::atomic<int32_t> pid;  // 0: never attached
  std::atomic<uint32_t> reported;  // rank 0's: its hang report is written
};
static_assert(std::atomic<uint64_t>::is_always_lock_free, "records are shared between processes");

namespace {

constexpr size_t kNameBytes = 64;
// How long a rank about to end on a timeout leaves rank 0 to write its
// report: on rank 0's host until rank 0 says it has (at most
// kSameHostSeconds: rank 0 may itself be the rank that is stuck); from
// other hosts, which cannot see that, a fixed kRank0Seconds.
constexpr unsigned kRank0Seconds = 2;
constexpr double kSameHostSeconds = 8;
// Rank 0's wait for the other hosts' records, and theirs to hand them over
// (rank 0 may time out a little later than they do).
constexpr double kCollectSeconds = 2, kSendSeconds = 5;

// RANK:CALL, both decimal; CALL from 1.
bool parse_stall(const std::string& v, long long& rank, unsigned long long& call) {
  char tail = 0;
  return std::sscanf(v.c_str(), "%lld:%llu%c", &rank, &call, &tail) == 2 && rank >= 0 && call >= 1;
}

// "" without random bytes: the board is best effort, and attach() is
// collective, so its host goes without a segment rather than throw alone.
std::string random_name() {
  try {
    return "/smddp-progress-" + crypto::random_hex(16);
  } catch (const Error&) {
    return {};
  }
}

// The state letter of /proc/PID/stat, in words.
std::string process_state(int pid) {
  if (pid <= 0) return "unknown";
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto paren = stat.rfind(')');
  if (paren == std::string::npos || paren + 2 >= stat.size()) return "gone";
  switch (stat[paren + 2]) {
    case 'T': case 't': return "stopped";
    case 'D': return "in uninterruptible sleep";
    case 'Z': case 'X': return "gone";
    default: return "running";
  }
}

std::string call_name(const HangRank& r) { return r.collective + " #" + std::to_string(r.sequence); }

// Position in the call stream: inside #n is 2n-1, past it 2n.
uint64_t position(const HangRank& r) { return 2 * r.sequence - (r.in_call ? 1 : 0); }

std::string list(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& x : v) out += (out.empty() ? "" : ", ") + x;
  return out;
}

void describe(HangReport& report) {
  // Whose ranks these are: one host's, or (rank 0) every host's that answered.
  const std::string scope = report.whole_job ? (report.hosts_missing.empty() ? "" : " of the hosts that answered")
                                             : " on host " + report.host;
  if (!report.hosts_missing.empty()) {
    report.lines.push_back("no report from host" + std::string(report.hosts_missing.size() > 1 ? "s " : " ") +
                           list(report.hosts_missing) + " within " + std::to_string(static_cast<int>(kCollectSeconds)) +
                           " s (its first rank is stopped, gone or not reporting)");
  }
  if (report.ranks.empty()) return;
  uint64_t front = 0;
  for (const auto& r : report.ranks) front = std::max(front, position(r));
  if (front == 0) {
    report.lines.push_back("no rank" + scope + " has started a call yet");
    return;
  }
  const HangRank* ahead = &report.ranks.front();
  int waiting = 0;
  // Behind: short of the front, or at it in a process that cannot go on
  // (stopped, gone): the others wait for it either way.
  for (auto& r : report.ranks) {
    r.behind = position(r) < front || (r.process != "running" && r.process != "unknown");
    if (!r.behind) {
      ++waiting;
      ahead = &r;
    }
  }
  const std::string where = ahead->in_call ? (waiting == 1 ? "waits in " : "wait in ") + call_name(*ahead)
                                           : "finished " + call_name(*ahead);
  size_t named = 0;
  for (const auto& r : report.ranks) {
    if (!r.behind) continue;
    std::string line = "rank " + std::to_string(r.rank) + " on host " + r.host + " ";
    if (r.sequence == 0) {
      line += "has not started any call";
    } else if (r.in_call) {
      line += (position(r) < front ? "is still in " : "is in ") + call_name(r);
    } else {
      line += "finished " + call_name(r) + " and has not started #" + std::to_string(r.sequence + 1);
    }
    if (r.process != "running") line += " (process " + r.process + ")";
    if (waiting > 0) line += "; the " + std::to_string(waiting) + (waiting == 1 ? " other " : " others ") + where;
    report.lines.push_back(line);
    ++named;
  }
  if (named == 0) {
    const std::string elsewhere = !report.whole_job ? " (the rank holding them up is on another host)"
                                  : !report.hosts_missing.empty() ? " (the rank holding them up is on a host that did not answer)"
                                                                  : "";
    report.lines.push_back("no rank" + scope + " is behind: all " + std::to_string(waiting) + " " + where +
                           (ahead->in_call ? elsewhere : ""));
  }
}

nlohmann::json rank_to_json(const HangRank& r) {
  return {{"rank", r.rank}, {"host", r.host}, {"sequence", r.sequence}, {"in_call", r.in_call},
          {"collective", r.sequence ? nlohmann::json(r.collective) : nlohmann::json(nullptr)},
          {"bytes", r.bytes}, {"process", r.process}, {"behind", r.behind}};
}

// Another host's records, as its first rank sent them; only its own ranks.
void add_ranks(HangReport& report, const std::string& host, const std::string& text, int nranks) {
  const auto j = nlohmann::json::parse(text, nullptr, false);
  if (!j.is_array()) return;
  for (const auto& e : j) {
    if (!e.is_object() || !e.value("rank", nlohmann::json()).is_number_integer()) continue;
    HangRank r;
    r.rank = e["rank"].get<int>();
    r.host = host;
    if (r.rank < 0 || r.rank >= nranks || e.value("host", "") != host) continue;
    r.sequence = e.value("sequence", uint64_t{0});
    r.in_call = e.value("in_call", false);
    r.collective = e.value("collective", nlohmann::json()).is_string() ? e["collective"].get<std::string>() : "";
    r.bytes = e.value("bytes", size_t{0});
    r.process = e.value("process", "unknown");
    report.ranks.push_back(std::move(r));
  }
}

}  // namespace

ProgressBoard& ProgressBoard::instance() {
  static ProgressBoard board;
  return board;
}

void register_stall_check() {
  config::add_check("SMDDP_TEST_STALL_AT", [](const std::string& v) {
    long long rank;
    unsigned long long call;
    if (!parse_stall(v, rank, call)) {
      throw UsageError("SMDDP_TEST_STALL_AT='" + v + "': expected RANK:CALL, e.g. 1:150 (CALL from 1)");
    }
  });
}

void ProgressBoard::attach(Communicator& comm) {
  rank_ = comm.rank();
  const int n = comm.size();
  for (int r = 0; r < n; ++r) hosts_.push_back(comm.host(r));
  int first = 0;
  while (hosts_[first] != hosts_[rank_]) ++first;
  reporter_ = first == rank_;
  bytes_ = sizeof(Record) * static_cast<size_t>(n);
  if (config::is_set("SMDDP_TEST_STALL_AT")) {
    unsigned long long call = 0;
    if (parse_stall(config::text("SMDDP_TEST_STALL_AT"), stall_rank_, call)) stall_at_ = call;
  }
  // The host's first rank creates the segment; everyone learns its name.
  char name[kNameBytes] = {};
  int fd = -1;
  if (reporter_) {
    const std::string chosen = random_name();
    fd = chosen.empty() ? -1 : shm_open(chosen.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd >= 0 && ftruncate(fd, static_cast<off_t>(bytes_)) == 0) {
      std::snprintf(name, sizeof name, "%s", chosen.c_str());
    } else if (fd >= 0) {
      close(fd);
      shm_unlink(chosen.c_str());
      fd = -1;
    }
  }
  std::vector<char> names(kNameBytes * static_cast<size_t>(n));
  comm.allgather(name, names.data(), kNameBytes, DataType::Uint8);
  const char* mine = names.data() + kNameBytes * static_cast<size_t>(first);
  if (!reporter_ && mine[0]) fd = shm_open(mine, O_RDWR | O_CLOEXEC, 0);
  void* map = fd >= 0 ? mmap(nullptr, bytes_, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0) : MAP_FAILED;
  if (fd >= 0) close(fd);
  int32_t ok = map != MAP_FAILED ? 1 : 0;
  comm.allreduce(&ok, &ok, 1, DataType::Int32, ReduceOp::Min);  // every rank has mapped (or given up)
  if (reporter_ && mine[0]) shm_unlink(mine);
  if (!ok) {
    if (map != MAP_FAILED) munmap(map, bytes_);
    if (rank_ == 0) std::fprintf(stderr, "smddp-bench: warning: no shared memory for the hang report\n");
    return;
  }
  records_ = static_cast<Record*>(map);
  records_[rank_].pid.store(static_cast<int32_t>(getpid()), std::memory_order_relaxed);
  attached_ = true;
  auto channel = std::make_shared<HangChannel>();
  channel->open(comm, hosts_);  // collective; off on one host
  if (channel->sends() || channel->receives()) channel_ = std::move(channel);
}

void ProgressBoard::enter(Collective collective, size_t bytes) {
  ++sequence_;
  if (stall_at_ == sequence_ && stall_rank_ == rank_) raise(SIGSTOP);  // test hook: before publishing
  if (!attached_) return;
  Record& r = records_[rank_];
  r.collective.store(static_cast<uint32_t>(collective), std::memory_order_relaxed);
  r.bytes.store(bytes, std::memory_order_relaxed);
  r.sequence.store(sequence_, std::memory_order_relaxed);
  r.in_call.store(1, std::memory_order_relaxed);
}

void ProgressBoard::leave() {
  if (attached_) records_[rank_].in_call.store(0, std::memory_order_relaxed);
}

HangReport ProgressBoard::read(const std::string& trigger) const {
  HangReport report;
  report.trigger = trigger;
  report.host = hosts_.empty() ? "" : hosts_[rank_];
  if (!attached_) return report;
  for (int r = 0; r < static_cast<int>(hosts_.size()); ++r) {
    if (hosts_[r] != report.host) continue;
    const Record& rec = records_[r];
    HangRank h;
    h.rank = r;
    h.host = hosts_[r];
    h.sequence = rec.sequence.load(std::memory_order_relaxed);
    h.in_call = rec.in_call.load(std::memory_order_relaxed) != 0;
    h.collective = std::string(to_string(static_cast<Collective>(rec.collective.load(std::memory_order_relaxed))));
    h.bytes = rec.bytes.load(std::memory_order_relaxed);
    h.process = r == rank_ ? "running" : process_state(rec.pid.load(std::memory_order_relaxed));
    report.ranks.push_back(std::move(h));
  }
  report.hosts = {report.host};
  if (channel_ && channel_->sends()) {
    nlohmann::json mine = nlohmann::json::array();
    for (const auto& r : report.ranks) mine.push_back(rank_to_json(r));
    report.forwarded = channel_->send(report.host, mine.dump(), kSendSeconds);
    if (report.forwarded) return report;  // rank 0 tells; else this host's report, here
  } else if (channel_ && channel_->receives()) {
    std::set<std::string> others;
    for (const auto& h : hosts_) {
      if (h != report.host) others.insert(h);
    }
    const auto got = channel_->collect(others, kCollectSeconds);
    for (const auto& h : others) {
      if (got.count(h)) {
        add_ranks(report, h, got.at(h), static_cast<int>(hosts_.size()));
        report.hosts.push_back(h);
      } else {
        report.hosts_missing.push_back(h);
      }
    }
    std::sort(report.ranks.begin(), report.ranks.end(), [](const HangRank& a, const HangRank& b) { return a.rank < b.rank; });
    report.whole_job = true;
  }
  describe(report);
  return report;
}

void ProgressBoard::let_rank0_report() const {
  if (!attached_) return;
  if (rank_ == 0) {  // called once the report is written
    records_[0].reported.store(1, std::memory_order_release);
    return;
  }
  const int rank0_pid = records_[0].pid.load(std::memory_order_relaxed);
  if (rank0_pid > 0) {  // rank 0 shares this host's board
    const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(kSameHostSeconds);
    while (records_[0].reported.load(std::memory_order_acquire) == 0 && kill(rank0_pid, 0) == 0 &&
           std::chrono::steady_clock::now() < until) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return;
  }
  // With other hosts, rank 0 may time out a little later and then waits
  // up to kCollectSeconds for their records.
  sleep(kRank0Seconds + (channel_ ? 3 : 0));
}

void print_hang_report(const HangReport& report) {
  for (const auto& line : report.lines) std::fprintf(stderr, "smddp-bench: hang: %s\n", line.c_str());
  std::fflush(stderr);
}

nlohmann::json hang_to_json(const HangReport& report) {
  nlohmann::json ranks = nlohmann::json::array();
  nlohmann::json behind = nlohmann::json::array();
  for (const auto& r : report.ranks) {
    ranks.push_back(rank_to_json(r));
    if (r.behind) behind.push_back(r.rank);
  }
  return {{"trigger", report.trigger}, {"host", report.host}, {"hosts", report.hosts},
          {"hosts_missing", report.hosts_missing}, {"behind", behind}, {"ranks", ranks}, {"message", report.lines}};
}

}  // namespace smddp::bench
