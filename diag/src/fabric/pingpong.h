// Ping-pong latency and streaming bandwidth between ranks over libfabric,
// pair by pair in rounds (schedule.h), addresses exchanged over MPI.
//
//   latency    half the median round trip of `latency_bytes` messages
//   bandwidth  `window` messages of `bw_bytes` in flight, then a short ack;
//              bytes moved / time, in GB/s (1e9 bytes/s, as nccl-tests)
#pragma once

#include <mpi.h>

#include <cstddef>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "fabric/providers.h"

namespace smddp::diag {

// The largest bandwidth message a probe registers and sends (--bw-bytes,
// link_bandwidth's bytes, isolate's --stream-bytes): buffers stay bounded.
inline constexpr uint64_t kMaxLinkMessageBytes = uint64_t{1} << 30;

struct PingPongOptions {
  std::string provider = "tcp";
  std::string domain;
  size_t latency_bytes = 8;
  int latency_iters = 50;
  size_t bw_bytes = 1 << 20;
  int bw_window = 16;
  int bw_iters = 4;
  int warmup = 2;
  double timeout_s = 30;
  int all_pairs_max = 32;  // above this many ranks, sample rounds
  int sample_rounds = 8;
};

struct LinkResult {
  int a = 0, b = 0;
  double latency_us = 0;
  double bw_gbs = 0;
};

struct LinkMatrix {
  int nranks = 0;
  std::vector<std::string> hosts;  // per rank
  ProviderInfo provider;
  int rounds = 0;
  bool sampled = false;
  std::vector<LinkResult> links;  // the tested pairs, sorted
};

// Collective over `comm`; the result is complete on rank 0 of `comm`.
// Throws tools::UnavailableError (provider missing), TimeoutError, TransportError.
LinkMatrix run_pingpong(MPI_Comm comm, const std::vector<std::string>& hosts, const PingPongOptions& options);

struct LinkThresholds {
  double min_bw_gbs = 0;       // 0: off
  double max_latency_us = 0;   // 0: off
  double slow_factor = 2.0;    // flag bw below median/factor, latency above median*factor; 0: off
};
struct FlaggedLink {
  int a = 0, b = 0;
  std::string reason;
};
std::vector<FlaggedLink> flag_links(const LinkMatrix& m, const LinkThresholds& t);

std::string link_matrix_text(const LinkMatrix& m, const std::vector<FlaggedLink>& flagged);
nlohmann::json link_matrix_json(const LinkMatrix& m, const std::vector<FlaggedLink>& flagged);

}  // namespace smddp::diag
