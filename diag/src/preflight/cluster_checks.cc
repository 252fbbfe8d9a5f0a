// Checks all ranks run together. Every exchange ends at a deadline so a
// stuck rank is named in the report instead of hanging the job; results are
// returned per node on rank 0.
#include <time.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fmt/format.h>

#include "fabric/pingpong.h"
#include "preflight/checks.h"
#include "preflight/cluster.h"
#include "shared/files.h"
#include "shared/mpi_util.h"
#include "shared/text.h"
#include "smddp/communicator.h"
#include "smddp/config.h"
#include "smddp/error.h"

namespace smddp::diag {

Faults Faults::from_env() {
  Faults f;
  const std::string env = config::text("SMDDP_DIAG_FAULT");
  if (env.empty()) return f;
  for (const auto& item : split(env, ',')) {
    // FAULT@HOST (corrupt, nccl_version=V) applies on HOST only, so every
    // rank can carry the same setting.
    const size_t at = item.find('@');
    const std::string body = item.substr(0, at), host = at == std::string::npos ? "" : item.substr(at + 1);
    const bool here = host.empty() || host == hostname();
    if ((body == "corrupt" || body.starts_with("nccl_version=")) && at != std::string::npos && host.empty()) {
      throw UsageError("SMDDP_DIAG_FAULT: '" + item + "' needs a host after '@'");
    }
    if (item == "unreachable") {
      f.unreachable = true;
    } else if (item.starts_with("clock_offset_ms=")) {
      auto v = parse_double(item.substr(16));
      if (!v) throw UsageError("SMDDP_DIAG_FAULT: '" + item + "' needs a number of milliseconds");
      f.clock_offset_ms = *v;
    } else if (body == "corrupt") {
      f.corrupt = f.corrupt || here;
    } else if (body.starts_with("nccl_version=")) {
      const std::string v = body.substr(13);
      if (v.empty()) throw UsageError("SMDDP_DIAG_FAULT: '" + item + "' needs a version (nccl_version=2.18.1[@HOST])");
      if (here) f.nccl_version = v;
    } else {
      throw UsageError("SMDDP_DIAG_FAULT: unknown fault '" + item + "' (known: unreachable, clock_offset_ms=N, nccl_version=V[@HOST], corrupt[@HOST])");
    }
  }
  return f;
}

std::string ClusterContext::who(int r) const { return fmt::format("rank {} ({})", r, hosts.at(static_cast<size_t>(r))); }

std::map<int, std::string> blame_unreachable(const std::vector<std::optional<std::vector<int>>>& missing,
                                             const std::vector<std::string>& hosts) {
  const int n = static_cast<int>(missing.size());
  std::map<int, std::string> blame;
  std::vector<int> missed_by(static_cast<size_t>(n), 0), reporters(static_cast<size_t>(n), 0);
  for (int i = 0; i < n; ++i) {
    if (!missing[static_cast<size_t>(i)]) continue;
    for (int j = 0; j < n; ++j) {
      if (j != i) ++reporters[static_cast<size_t>(j)];
    }
    for (int j : *missing[static_cast<size_t>(i)]) ++missed_by[static_cast<size_t>(j)];
  }
  std::vector<bool> bad(static_cast<size_t>(n), false);
  for (int j = 0; j < n; ++j) {
    const size_t uj = static_cast<size_t>(j);
    if (!missing[uj]) {
      bad[uj] = true;
      blame[j] = fmt::format("rank {} ({}) sent no reachability report in time", j, hosts[uj]);
    } else if (missed_by[uj] > 0 && 2 * missed_by[uj] > reporters[uj]) {
      bad[uj] = true;
      blame[j] = fmt::format("rank {} ({}) unreachable: no answer to {} of {} ranks", j, hosts[uj], missed_by[uj], reporters[uj]);
    }
  }
  // A rank that heard from few of the reachable others has a broken receive
  // side: it is blamed, and its misses do not blame the others.
  int bad_count = static_cast<int>(std::count(bad.begin(), bad.end(), true));
  std::vector<bool> deaf(static_cast<size_t>(n), false);
  for (int i = 0; i < n; ++i) {
    const size_t ui = static_cast<size_t>(i);
    if (!missing[ui] || bad[ui]) continue;
    int heard_not = 0;
    for (int j : *missing[ui]) heard_not += bad[static_cast<size_t>(j)] ? 0 : 1;
    const int others = n - 1 - bad_count;
    if (heard_not > 0 && 2 * heard_not > others) {
      deaf[ui] = true;
      blame[i] = fmt::format("rank {} ({}) heard no answer from {} of {} ranks", i, hosts[ui], heard_not, others);
    }
  }
  std::map<int, std::vector<std::string>> partial;
  for (int i = 0; i < n; ++i) {
    const size_t ui = static_cast<size_t>(i);
    if (!missing[ui] || bad[ui] || deaf[ui]) continue;
    for (int j : *missing[ui]) {
      if (!bad[static_cast<size_t>(j)]) partial[j].push_back(std::to_string(i));
    }
  }
  for (const auto& [j, from] : partial) {
    blame[j] = fmt::format("rank {} ({}) gave no answer to rank(s) {}", j, hosts[static_cast<size_t>(j)], join(from, ", "));
  }
  return blame;
}

namespace {

std::vector<CheckResult> per_node(const ClusterContext& ctx, const std::string& check, const CheckResult& all) {
  std::vector<CheckResult> out(static_cast<size_t>(ctx.num_nodes()), all);
  for (auto& r : out) r.check = check;
  return out;
}

double wall_ms(const Faults& f) {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) / 1e6 + f.clock_offset_ms;
}

std::string encode(double v) { return std::string(reinterpret_cast<const char*>(&v), sizeof v); }
double decode(const std::string& s) {
  double v = 0;
  if (s.size() == sizeof v) std::memcpy(&v, s.data(), sizeof v);
  return v;
}

}  // namespace

std::vector<CheckResult> check_rank_reachability(ClusterContext& ctx, const Params& p) {
  const double timeout = p.number("timeout_s");
  const Deadline deadline = deadline_in(timeout);
  std::vector<MPI_Request> recvs, sends;
  std::vector<char> in(static_cast<size_t>(ctx.size), 0);
  const char token = 1;
  for (int peer = 0; peer < ctx.size; ++peer) {
    if (peer == ctx.rank) continue;
    recvs.emplace_back();
    MPI_Irecv(&in[static_cast<size_t>(peer)], 1, MPI_CHAR, peer, kTagReach, ctx.comm, &recvs.back());
  }
  for (int peer = 0; peer < ctx.size; ++peer) {
    if (peer == ctx.rank || ctx.faults.unreachable) continue;
    sends.emplace_back();
    MPI_Isend(&token, 1, MPI_CHAR, peer, kTagReach, ctx.comm, &sends.back());
  }
  Backoff backoff;
  for (;;) {
    int done = 0;
    MPI_Testall(static_cast<int>(recvs.size()), recvs.data(), &done, MPI_STATUSES_IGNORE);
    if (done || Clock::now() > deadline) break;
    backoff.pause();
  }
  std::vector<int> missing;
  for (int peer = 0; peer < ctx.size; ++peer) {
    if (peer != ctx.rank && !in[static_cast<size_t>(peer)]) missing.push_back(peer);
  }
  for (auto& r : recvs) {
    if (r != MPI_REQUEST_NULL) {
      MPI_Cancel(&r);
      MPI_Wait(&r, MPI_STATUS_IGNORE);
    }
  }
  // Sends of one byte complete eagerly; a peer that never posted is the one reported.
  for (auto& s : sends) {
    if (s != MPI_REQUEST_NULL) MPI_Request_free(&s);
  }
  nlohmann::json mine = missing;
  auto reports = gather_until(ctx.comm, 0, mine.dump(), kTagReachReport, deadline_in(timeout + 10));
  if (ctx.rank != 0) return {};
  std::vector<std::optional<std::vector<int>>> missing_by(static_cast<size_t>(ctx.size));
  for (int r = 0; r < ctx.size; ++r) {
    if (const auto& rep = reports[static_cast<size_t>(r)]) missing_by[static_cast<size_t>(r)] = nlohmann::json::parse(*rep).get<std::vector<int>>();
  }
  auto blame = blame_unreachable(missing_by, ctx.hosts);
  std::vector<CheckResult> out;
  for (int n = 0; n < ctx.num_nodes(); ++n) {
    std::vector<std::string> reasons;
    for (const auto& [r, why] : blame) {
      if (ctx.node_of[static_cast<size_t>(r)] == n) reasons.push_back(why);
    }
    if (reasons.empty()) {
      out.push_back(CheckResult::pass("rank_reachability", fmt::format("all {} ranks answered within {} s", ctx.size, timeout)));
    } else {
      out.push_back(CheckResult::fail("rank_reachability", join(reasons, "; ")));
    }
  }
  return out;
}

std::vector<CheckResult> check_clock_skew(ClusterContext& ctx, const Params& p) {
  const double max_ms = p.number("max_ms");
  const int samples = static_cast<int>(p.integer("samples"));
  const double timeout = p.number("timeout_s");
  if (ctx.num_nodes() < 2) return per_node(ctx, "clock_skew", CheckResult::skip("", "one node: no clock to compare"));
  if (ctx.rank == 0) {
    std::vector<CheckResult> out(static_cast<size_t>(ctx.num_nodes()));
    out[0] = CheckResult::pass("clock_skew", "reference clock (rank 0)", {{"offset_ms", 0.0}});
    for (int n = 1; n < ctx.num_nodes(); ++n) {
      const int leader = ctx.leaders[static_cast<size_t>(n)];
      const Deadline d = deadline_in(timeout);
      bool ok = true;
      for (int s = 0; s < samples && ok; ++s) {
        ok = recv_until(ctx.comm, leader, kTagClockPing, d).has_value() &&
             send_until(ctx.comm, leader, kTagClockReply, encode(wall_ms(ctx.faults)), d);
      }
      auto offset = ok ? recv_until(ctx.comm, leader, kTagClockResult, d) : std::nullopt;
      if (!offset) {
        out[static_cast<size_t>(n)] = CheckResult::fail("clock_skew", fmt::format("no clock samples from {} within {} s", ctx.who(leader), timeout));
        continue;
      }
      const double ms = decode(*offset);
      nlohmann::json values = {{"offset_ms", ms}, {"max_ms", max_ms}};
      std::string rel = fmt::format("{:.3f} ms {} rank 0 ({})", std::fabs(ms), ms >= 0 ? "ahead of" : "behind", ctx.hosts[0]);
      out[static_cast<size_t>(n)] = std::fabs(ms) > max_ms ? CheckResult::fail("clock_skew", fmt::format("clock {} (max {} ms)", rel, max_ms), values)
                                                           : CheckResult::pass("clock_skew", "clock " + rel, values);
    }
    return out;
  }
  if (ctx.leader()) {
    // NTP-style: offset = server time - midpoint of the round trip; the
    // fastest round trip has the least asymmetry.
    const Deadline d = deadline_in(timeout * 2 + 0.05 * ctx.num_nodes());
    double best_rtt = 1e300, best_offset = 0;
    for (int s = 0; s < samples; ++s) {
      const double t0 = wall_ms(ctx.faults);
      if (!send_until(ctx.comm, 0, kTagClockPing, "?", d)) break;
      auto reply = recv_until(ctx.comm, 0, kTagClockReply, d);
      if (!reply) break;
      const double t2 = wall_ms(ctx.faults);
      if (t2 - t0 < best_rtt) {
        best_rtt = t2 - t0;
        best_offset = (t0 + t2) / 2 - decode(*reply);
      }
    }
    send_until(ctx.comm, 0, kTagClockResult, encode(best_offset), d);
  }
  return {};
}

std::vector<CheckResult> check_allreduce_busbw(ClusterContext& ctx, const Params& p) {
  if (ctx.size < 2) return per_node(ctx, "allreduce_busbw", CheckResult::skip("", "one rank: nothing to reduce"));
  const uint64_t bytes = p.size("bytes").value_or(0);
  const size_t count = static_cast<size_t>(bytes / sizeof(float));
  const int iters = static_cast<int>(p.integer("iterations"));
  const int warmup = static_cast<int>(p.integer("warmup"));
  const bool by_model = !ctx.model_floor_by.empty();
  const double min_gbs = by_model ? ctx.model_floor_gbs : p.number("min_gbytes_per_s");
  const double timeout = p.number("timeout_s");
  std::vector<float> send(count), recv(count);
  for (size_t i = 0; i < count; ++i) send[i] = static_cast<float>(ctx.rank + 1) + static_cast<float>(i % 13);
  std::string error;
  double seconds = 0;
  uint64_t wrong = 0;
  const double old_timeout = ctx.engine->timeout();
  ctx.engine->set_timeout(timeout);
  try {
    for (int i = 0; i < warmup; ++i) ctx.engine->allreduce(send.data(), recv.data(), count, DataType::Float32, ReduceOp::Sum);
    ctx.engine->barrier();
    auto t0 = Clock::now();
    for (int i = 0; i < iters; ++i) ctx.engine->allreduce(send.data(), recv.data(), count, DataType::Float32, ReduceOp::Sum);
    seconds = std::chrono::duration<double>(Clock::now() - t0).count();
    const float base = static_cast<float>(ctx.size) * static_cast<float>(ctx.size + 1) / 2;
    for (size_t i = 0; i < count; ++i) {
      if (recv[i] != base + static_cast<float>(ctx.size) * static_cast<float>(i % 13)) ++wrong;
    }
  } catch (const std::exception& e) {
    error = e.what();
  }
  ctx.engine->set_timeout(old_timeout);
  nlohmann::json mine = {{"error", error}, {"seconds", seconds}, {"wrong", wrong}};
  auto reports = gather_until(ctx.comm, 0, mine.dump(), kTagBusbwReport, deadline_in(timeout + 10));
  if (ctx.rank != 0) return {};
  double slowest = 0;
  uint64_t total_wrong = 0;
  std::map<int, std::vector<std::string>> errors;  // node -> messages
  for (int r = 0; r < ctx.size; ++r) {
    const auto& rep = reports[static_cast<size_t>(r)];
    const int node = ctx.node_of[static_cast<size_t>(r)];
    if (!rep) {
      errors[node].push_back(ctx.who(r) + " sent no result in time");
      continue;
    }
    auto j = nlohmann::json::parse(*rep);
    if (!j["error"].get<std::string>().empty()) errors[node].push_back(ctx.who(r) + ": " + j["error"].get<std::string>());
    slowest = std::max(slowest, j["seconds"].get<double>());
    total_wrong += j["wrong"].get<uint64_t>();
  }
  if (!errors.empty()) {
    std::vector<CheckResult> out;
    for (int n = 0; n < ctx.num_nodes(); ++n) {
      auto it = errors.find(n);
      out.push_back(it == errors.end() ? CheckResult::skip("allreduce_busbw", "the allreduce failed on another node")
                                       : CheckResult::fail("allreduce_busbw", "allreduce failed: " + join(it->second, "; ")));
    }
    return out;
  }
  const double algbw = slowest > 0 ? static_cast<double>(bytes) * iters / slowest / 1e9 : 0;
  const double busbw = algbw * 2.0 * (ctx.size - 1) / ctx.size;
  nlohmann::json values = {{"busbw_gbs", busbw}, {"algbw_gbs", algbw}, {"bytes", bytes}, {"ranks", ctx.size}, {"wrong", total_wrong}};
  if (total_wrong > 0) {
    return per_node(ctx, "allreduce_busbw", CheckResult::fail("allreduce_busbw", fmt::format("{} wrong elements in the allreduce result", total_wrong), values,
                                                                          results::code::kPreflightAllreduceWrong));
  }
  if (busbw < min_gbs) {
    return per_node(ctx, "allreduce_busbw",
                    CheckResult::fail("allreduce_busbw", by_model ? fmt::format("bus bandwidth {:.3f} GB/s < minimum {:.3f} GB/s ({} ranks, {}; {})", busbw,
                                                                 min_gbs, ctx.size, format_bytes(bytes), ctx.model_floor_by)
                                                   : fmt::format("bus bandwidth {:.3f} GB/s < minimum {} GB/s ({} ranks, {})", busbw, min_gbs,
                                                                 ctx.size, format_bytes(bytes)), values));
  }
  return per_node(ctx, "allreduce_busbw",
                  CheckResult::pass("", fmt::format("bus bandwidth {:.3f} GB/s ({} ranks, {})", busbw, ctx.size, format_bytes(bytes)), values));
}

std::vector<CheckResult> check_link_bandwidth(ClusterContext& ctx, const Params& p) {
  if (ctx.num_nodes() < 2) return per_node(ctx, "link_bandwidth", CheckResult::skip("", "one node: no link between nodes"));
  MPI_Comm leaders = MPI_COMM_NULL;
  MPI_Comm_split(ctx.comm, ctx.leader() ? 0 : MPI_UNDEFINED, ctx.rank, &leaders);
  if (leaders == MPI_COMM_NULL) return {};
  PingPongOptions o;
  o.provider = p.string("provider");
  o.bw_bytes = p.size("bytes").value_or(1);
  o.bw_window = static_cast<int>(p.integer("window"));
  o.bw_iters = static_cast<int>(p.integer("iterations"));
  o.latency_iters = 10;
  o.timeout_s = p.number("timeout_s");
  o.all_pairs_max = static_cast<int>(p.integer("all_pairs_max"));
  o.sample_rounds = static_cast<int>(p.integer("rounds"));
  std::vector<std::string> node_hosts;
  for (int n = 0; n < ctx.num_nodes(); ++n) node_hosts.push_back(ctx.labels[static_cast<size_t>(n)]);
  std::optional<LinkMatrix> m;
  std::string error;
  try {
    m = run_pingpong(leaders, node_hosts, o);
  } catch (const std::exception& e) {
    error = e.what();
  }
  MPI_Comm_free(&leaders);
  if (ctx.rank != 0) return {};
  if (!m) return per_node(ctx, "link_bandwidth", CheckResult::fail("link_bandwidth", "link probe failed: " + error));
  LinkThresholds t;
  t.min_bw_gbs = p.number("min_gbytes_per_s");
  t.slow_factor = p.number("max_slowdown");
  auto flagged = flag_links(*m, t);
  std::vector<std::vector<std::string>> reasons(static_cast<size_t>(ctx.num_nodes()));
  for (const auto& f : flagged) {
    reasons[static_cast<size_t>(f.a)].push_back(fmt::format("link to {}: {}", node_hosts[static_cast<size_t>(f.b)], f.reason));
    reasons[static_cast<size_t>(f.b)].push_back(fmt::format("link to {}: {}", node_hosts[static_cast<size_t>(f.a)], f.reason));
  }
  std::vector<CheckResult> out;
  for (int n = 0; n < ctx.num_nodes(); ++n) {
    nlohmann::json links = nlohmann::json::array();
    double lowest = 1e300;
    for (const auto& l : m->links) {
      if (l.a != n && l.b != n) continue;
      links.push_back({{"peer", node_hosts[static_cast<size_t>(l.a == n ? l.b : l.a)]}, {"bandwidth_gbs", l.bw_gbs}, {"latency_us", l.latency_us}});
      lowest = std::min(lowest, l.bw_gbs);
    }
    nlohmann::json values = {{"links", links}, {"provider", m->provider.provider}};
    const auto& why = reasons[static_cast<size_t>(n)];
    if (!why.empty()) {
      out.push_back(CheckResult::fail("link_bandwidth", join(why, "; "), values));
    } else if (links.empty()) {
      out.push_back(CheckResult::skip("link_bandwidth", "no link of this node in the sampled rounds"));
    } else {
      out.push_back(CheckResult::pass("link_bandwidth", fmt::format("{} links over {}, slowest {:.3f} GB/s", links.size(), m->provider.provider, lowest), values));
    }
  }
  return out;
}

}  // namespace smddp::diag
