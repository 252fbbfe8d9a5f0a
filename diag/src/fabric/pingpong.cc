#include "fabric/pingpong.h"

#include <algorithm>
#include <fmt/format.h>
#include <exception>
#include <map>
#include <set>
#include <tuple>

#include "fabric/probe_endpoint.h"
#include "fabric/schedule.h"
#include "shared/mpi_util.h"
#include "shared/text.h"
#include "smddp/error.h"

namespace smddp::diag {
namespace {

enum Phase : uint64_t { kLatency = 1, kData = 2, kAck = 3 };
uint64_t make_tag(int round, Phase phase) { return (static_cast<uint64_t>(round) << 8) | phase; }

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// Everyone exchanges endpoint addresses (fixed width, zero padded).
std::vector<std::string> exchange_addresses(MPI_Comm comm, const std::string& mine) {
  int size = 1;
  MPI_Comm_size(comm, &size);
  int len = static_cast<int>(mine.size()), max_len = 0;
  MPI_Allreduce(&len, &max_len, 1, MPI_INT, MPI_MAX, comm);
  std::vector<int> lens(static_cast<size_t>(size));
  MPI_Allgather(&len, 1, MPI_INT, lens.data(), 1, MPI_INT, comm);
  std::string padded = mine;
  padded.resize(static_cast<size_t>(max_len));
  std::string all(static_cast<size_t>(max_len) * static_cast<size_t>(size), '\0');
  MPI_Allgather(padded.data(), max_len, MPI_BYTE, all.data(), max_len, MPI_BYTE, comm);
  std::vector<std::string> out;
  for (int r = 0; r < size; ++r) {
    out.push_back(all.substr(static_cast<size_t>(r) * static_cast<size_t>(max_len), static_cast<size_t>(lens[static_cast<size_t>(r)])));
  }
  return out;
}

// A barrier that sleeps while it waits and gives up at the deadline.
void barrier_until(MPI_Comm comm, Deadline deadline, int round) {
  MPI_Request req;
  MPI_Ibarrier(comm, &req);
  Backoff backoff;
  for (;;) {
    int done = 0;
    MPI_Test(&req, &done, MPI_STATUS_IGNORE);
    if (done) return;
    if (Clock::now() > deadline) {
      throw TimeoutError(fmt::format("fabric probe: not every rank finished round {} before the deadline", round));
    }
    backoff.pause();
  }
}

class PairRunner {
 public:
  PairRunner(RdmEndpoint& ep, const PingPongOptions& o, const std::vector<std::string>& hosts)
      : ep_(ep), o_(o), hosts_(hosts) {}

  std::string who(int peer) const { return fmt::format("rank {} ({})", peer, hosts_.at(static_cast<size_t>(peer))); }

  // The starting side: times both measurements.
  LinkResult start(int self, int peer, int round) {
    LinkResult r{self, peer, 0, 0};
    std::vector<double> rtts;
    for (int i = 0; i < o_.warmup + o_.latency_iters; ++i) {
      auto t0 = Clock::now();
      Deadline d = deadline_in(o_.timeout_s);
      ep_.post_recv(peer, o_.latency_bytes, make_tag(round, kLatency), d);
      ep_.post_send(peer, o_.latency_bytes, make_tag(round, kLatency), d);
      ep_.wait_all(d, "latency reply from " + who(peer));
      if (i >= o_.warmup) rtts.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
    }
    r.latency_us = median(rtts) / 2;
    double seconds = 0;
    for (int i = 0; i < o_.warmup + o_.bw_iters; ++i) {
      auto t0 = Clock::now();
      Deadline d = deadline_in(o_.timeout_s);
      ep_.post_recv(peer, 1, make_tag(round, kAck), d);
      for (int w = 0; w < o_.bw_window; ++w) ep_.post_send(peer, o_.bw_bytes, make_tag(round, kData), d);
      ep_.wait_all(d, "bandwidth acknowledgement from " + who(peer));
      if (i >= o_.warmup) seconds += std::chrono::duration<double>(Clock::now() - t0).count();
    }
    double bytes = static_cast<double>(o_.bw_bytes) * o_.bw_window * o_.bw_iters;
    r.bw_gbs = seconds > 0 ? bytes / seconds / 1e9 : 0;
    return r;
  }

  void answer(int peer, int round) {
    for (int i = 0; i < o_.warmup + o_.latency_iters; ++i) {
      Deadline d = deadline_in(o_.timeout_s);
      ep_.post_recv(peer, o_.latency_bytes, make_tag(round, kLatency), d);
      ep_.wait_all(d, "latency ping from " + who(peer));
      ep_.post_send(peer, o_.latency_bytes, make_tag(round, kLatency), d);
      ep_.wait_all(d, "latency reply to " + who(peer));
    }
    for (int i = 0; i < o_.warmup + o_.bw_iters; ++i) {
      Deadline d = deadline_in(o_.timeout_s);
      for (int w = 0; w < o_.bw_window; ++w) ep_.post_recv(peer, o_.bw_bytes, make_tag(round, kData), d);
      ep_.wait_all(d, "bandwidth data from " + who(peer));
      ep_.post_send(peer, 1, make_tag(round, kAck), d);
      ep_.wait_all(d, "bandwidth acknowledgement to " + who(peer));
    }
  }

 private:
  RdmEndpoint& ep_;
  const PingPongOptions& o_;
  const std::vector<std::string>& hosts_;
};

}  // namespace

LinkMatrix run_pingpong(MPI_Comm comm, const std::vector<std::string>& hosts, const PingPongOptions& o) {
  int rank = 0, size = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  LinkMatrix m;
  m.nranks = size;
  m.hosts = hosts;
  // Every rank must learn whether every other opened its endpoint, or the
  // ones that did would wait for the ones that did not.
  std::unique_ptr<RdmEndpoint> ep;
  std::exception_ptr error;
  try {
    ep = std::make_unique<RdmEndpoint>(o.provider, o.domain, std::max(o.bw_bytes, o.latency_bytes));
  } catch (const std::exception&) {
    error = std::current_exception();
  }
  int failed = error ? 1 : 0, any_failed = 0;
  MPI_Allreduce(&failed, &any_failed, 1, MPI_INT, MPI_MAX, comm);
  if (error) std::rethrow_exception(error);
  if (any_failed) throw TransportError("fabric probe: another rank could not open its libfabric endpoint");
  m.provider = ep->info();
  ep->insert_peers(exchange_addresses(comm, ep->address()));

  std::vector<Round> rounds = size <= o.all_pairs_max ? all_pairs_schedule(size) : sampled_schedule(size, o.sample_rounds);
  m.sampled = size > o.all_pairs_max && static_cast<int>(all_pairs_schedule(size).size()) > o.sample_rounds;
  m.rounds = static_cast<int>(rounds.size());
  PairRunner runner(*ep, o, hosts);
  std::vector<double> mine;  // a, b, latency, bw per pair this rank started
  for (int r = 0; r < m.rounds; ++r) {
    for (const auto& [a, b] : rounds[static_cast<size_t>(r)]) {
      if (a == rank) {
        LinkResult res = runner.start(a, b, r);
        mine.insert(mine.end(), {double(a), double(b), res.latency_us, res.bw_gbs});
      } else if (b == rank) {
        runner.answer(a, r);
      }
    }
    // Rounds stay apart: the pairs of one round are the only traffic.
    // A stuck partner is detected after timeout_s; allow that and some work.
    barrier_until(comm, deadline_in(o.timeout_s * 4), r);
  }
  // Rank 0 collects every rank's pairs.
  int count = static_cast<int>(mine.size());
  std::vector<int> counts(static_cast<size_t>(size)), offsets(static_cast<size_t>(size));
  MPI_Gather(&count, 1, MPI_INT, counts.data(), 1, MPI_INT, 0, comm);
  int total = 0;
  for (int r = 0; r < size; ++r) {
    offsets[static_cast<size_t>(r)] = total;
    total += counts[static_cast<size_t>(r)];
  }
  std::vector<double> all(static_cast<size_t>(rank == 0 ? total : 0));
  MPI_Gatherv(mine.data(), count, MPI_DOUBLE, all.data(), counts.data(), offsets.data(), MPI_DOUBLE, 0, comm);
  for (size_t i = 0; i + 3 < all.size(); i += 4) {
    m.links.push_back(LinkResult{static_cast<int>(all[i]), static_cast<int>(all[i + 1]), all[i + 2], all[i + 3]});
  }
  std::sort(m.links.begin(), m.links.end(), [](const LinkResult& x, const LinkResult& y) {
    return std::tie(x.a, x.b) < std::tie(y.a, y.b);
  });
  return m;
}

std::vector<FlaggedLink> flag_links(const LinkMatrix& m, const LinkThresholds& t) {
  std::vector<double> bws, lats;
  for (const auto& l : m.links) {
    bws.push_back(l.bw_gbs);
    lats.push_back(l.latency_us);
  }
  const double median_bw = median(bws), median_lat = median(lats);
  std::vector<FlaggedLink> out;
  for (const auto& l : m.links) {
    std::vector<std::string> why;
    if (t.min_bw_gbs > 0 && l.bw_gbs < t.min_bw_gbs) {
      why.push_back(fmt::format("{:.3f} GB/s < minimum {:.3f} GB/s", l.bw_gbs, t.min_bw_gbs));
    } else if (t.slow_factor > 0 && m.links.size() > 2 && l.bw_gbs * t.slow_factor < median_bw) {
      why.push_back(fmt::format("{:.3f} GB/s, over {}x below the median {:.3f} GB/s", l.bw_gbs, t.slow_factor, median_bw));
    }
    if (t.max_latency_us > 0 && l.latency_us > t.max_latency_us) {
      why.push_back(fmt::format("latency {:.1f} us > maximum {:.1f} us", l.latency_us, t.max_latency_us));
    } else if (t.slow_factor > 0 && m.links.size() > 2 && l.latency_us > median_lat * t.slow_factor) {
      why.push_back(fmt::format("latency {:.1f} us, over {}x the median {:.1f} us", l.latency_us, t.slow_factor, median_lat));
    }
    if (!why.empty()) out.push_back(FlaggedLink{l.a, l.b, join(why, "; ")});
  }
  return out;
}

namespace {

std::string matrix(const LinkMatrix& m, const std::vector<FlaggedLink>& flagged, bool bandwidth) {
  std::map<std::pair<int, int>, const LinkResult*> by_pair;
  for (const auto& l : m.links) by_pair[{l.a, l.b}] = &l;
  std::set<std::pair<int, int>> marked;
  for (const auto& f : flagged) marked.insert({f.a, f.b});
  std::string out = fmt::format("{:>6}", "");
  for (int c = 0; c < m.nranks; ++c) out += fmt::format("{:>10}", "r" + std::to_string(c));
  out += "\n";
  for (int r = 0; r < m.nranks; ++r) {
    out += fmt::format("{:>6}", "r" + std::to_string(r));
    for (int c = 0; c < m.nranks; ++c) {
      auto key = std::make_pair(std::min(r, c), std::max(r, c));
      auto it = by_pair.find(key);
      std::string cell = r == c ? "-" : it == by_pair.end() ? "." : format_number(bandwidth ? it->second->bw_gbs : it->second->latency_us, bandwidth ? 3 : 1);
      if (r != c && marked.count(key)) cell += "*";
      out += fmt::format("{:>10}", cell);
    }
    out += "\n";
  }
  return out;
}

}  // namespace

std::string link_matrix_text(const LinkMatrix& m, const std::vector<FlaggedLink>& flagged) {
  std::string out = fmt::format("Provider {} (fabric {}, domain {}), {} ranks, {} pairs in {} rounds{}\n", m.provider.provider,
                                m.provider.fabric, m.provider.domain, m.nranks, m.links.size(), m.rounds,
                                m.sampled ? " (sampled: '.' = not tested)" : "");
  for (int r = 0; r < m.nranks; ++r) out += fmt::format("  r{} = {}\n", r, m.hosts.at(static_cast<size_t>(r)));
  out += "Latency (us, half round trip):\n" + matrix(m, flagged, false);
  out += "Bandwidth (GB/s):\n" + matrix(m, flagged, true);
  if (flagged.empty()) {
    out += "Flagged links: none\n";
  } else {
    out += fmt::format("Flagged links ({}):\n", flagged.size());
    for (const auto& f : flagged) {
      out += fmt::format("  r{} ({}) <-> r{} ({}): {}\n", f.a, m.hosts.at(static_cast<size_t>(f.a)), f.b,
                         m.hosts.at(static_cast<size_t>(f.b)), f.reason);
    }
  }
  return out;
}

nlohmann::json link_matrix_json(const LinkMatrix& m, const std::vector<FlaggedLink>& flagged) {
  using nlohmann::json;
  json j;
  j["provider"] = provider_json(m.provider);
  j["ranks"] = m.nranks;
  j["hosts"] = m.hosts;
  j["rounds"] = m.rounds;
  j["sampled"] = m.sampled;
  j["links"] = json::array();
  for (const auto& l : m.links) {
    j["links"].push_back({{"a", l.a}, {"b", l.b}, {"latency_us", l.latency_us}, {"bandwidth_gbs", l.bw_gbs}});
  }
  j["flagged"] = json::array();
  for (const auto& f : flagged) j["flagged"].push_back({{"a", f.a}, {"b", f.b}, {"reason", f.reason}});
  return j;
}

}  // namespace smddp::diag
