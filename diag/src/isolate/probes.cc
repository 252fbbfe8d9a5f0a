#include "isolate/probes.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <bit>
#include <memory>
#include <tuple>

namespace smddp::diag {
namespace {

// Buffers of requests abandoned at a deadline: MPI may still touch them.
std::vector<std::shared_ptr<std::vector<float>>>& abandoned() {
  static std::vector<std::shared_ptr<std::vector<float>>> kept;
  return kept;
}

// Waits for all `requests`; at the deadline cancels the receives, releases
// the sends and returns false.
bool wait_all(std::vector<MPI_Request>& requests, size_t receives, Deadline deadline) {
  Backoff backoff;
  for (;;) {
    int done = 0;
    MPI_Testall(static_cast<int>(requests.size()), requests.data(), &done, MPI_STATUSES_IGNORE);
    if (done) return true;
    if (Clock::now() >= deadline) break;
    backoff.pause();
  }
  // A receive the stopped peer had begun to fill cannot be cancelled, and
  // MPI_Wait on it would block until the peer resumes: poll briefly, then
  // release it (its buffer is kept, see abandoned()).
  for (size_t i = 0; i < requests.size(); ++i) {
    if (requests[i] == MPI_REQUEST_NULL) continue;
    if (i < receives) MPI_Cancel(&requests[i]);
  }
  const Deadline grace = deadline_in(0.1);
  for (size_t i = 0; i < requests.size(); ++i) {
    int done = 0;
    while (i < receives && requests[i] != MPI_REQUEST_NULL && !done && Clock::now() < grace) {
      MPI_Test(&requests[i], &done, MPI_STATUS_IGNORE);
      if (!done) backoff.pause();
    }
    if (requests[i] != MPI_REQUEST_NULL) MPI_Request_free(&requests[i]);
  }
  return false;
}

// "0", "0, 23": the set bits of `x`, lowest first.
std::string differing_bits(uint32_t x) {
  std::vector<int> bits;
  for (int b = 0; b < 32; ++b) {
    if (x >> b & 1u) bits.push_back(b);
  }
  return fmt::format("{}", fmt::join(bits, ", "));
}

double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

std::string name(int rank, const std::vector<std::string>& hosts) {
  return fmt::format("rank {} ({})", rank, hosts.at(static_cast<size_t>(rank)));
}

}  // namespace

ProbeResult probe_allreduce(MPI_Comm comm, const std::vector<int>& group, const AllreduceProbe& p, int tag,
                            Deadline deadline, const std::vector<std::string>& hosts) {
  ProbeResult out;
  int me = 0;
  MPI_Comm_rank(comm, &me);
  const int n = static_cast<int>(group.size());
  const int pos = static_cast<int>(std::find(group.begin(), group.end(), me) - group.begin());
  const size_t chunk = std::max<size_t>(1, p.bytes / sizeof(float) / static_cast<size_t>(n));
  const size_t count = chunk * static_cast<size_t>(n);
  auto data = std::make_shared<std::vector<float>>(count);
  auto incoming = std::make_shared<std::vector<float>>(chunk);
  const int right = group[static_cast<size_t>((pos + 1) % n)], left = group[static_cast<size_t>((pos + n - 1) % n)];
  auto fill = [&] {
    for (size_t i = 0; i < count; ++i) (*data)[i] = static_cast<float>(me % 7 + 1) + static_cast<float>(i % 5);
  };
  // Ring: n-1 reduce-scatter steps, then n-1 allgather steps.
  auto step = [&](int s, bool reduce) -> bool {
    const int send_chunk = reduce ? (pos - s + 2 * n) % n : (pos + 1 - s + 2 * n) % n;
    const int recv_chunk = (send_chunk - 1 + n) % n;
    float* dst = reduce ? incoming->data() : data->data() + static_cast<size_t>(recv_chunk) * chunk;
    std::vector<MPI_Request> req(2);
    MPI_Irecv(dst, static_cast<int>(chunk), MPI_FLOAT, left, tag, comm, &req[0]);
    float* out_chunk = data->data() + static_cast<size_t>(send_chunk) * chunk;
    // The fault flips the bit in the buffer it sends from: the corruption
    // then spreads as a bad link's or a bad reduction's would.
    if (p.flip_sent_bit) *out_chunk = std::bit_cast<float>(std::bit_cast<uint32_t>(*out_chunk) ^ 1u);
    MPI_Isend(out_chunk, static_cast<int>(chunk), MPI_FLOAT, right, tag, comm, &req[1]);
    if (!wait_all(req, 1, deadline)) {
      out.error = fmt::format("allreduce of {} ranks: no exchange with {} / {} by the deadline", n,
                              name(left, hosts), name(right, hosts));
      return false;
    }
    if (reduce) {
      float* acc = data->data() + static_cast<size_t>(recv_chunk) * chunk;
      for (size_t i = 0; i < chunk; ++i) acc[i] += (*incoming)[i];
    }
    return true;
  };
  auto once = [&]() -> bool {
    fill();
    for (int s = 0; s < n - 1; ++s) {
      if (!step(s, true)) return false;
    }
    for (int s = 0; s < n - 1; ++s) {
      if (!step(s, false)) return false;
    }
    return true;
  };
  bool ok = true;
  for (int i = 0; i < p.warmup && ok; ++i) ok = once();
  const auto t0 = Clock::now();
  for (int i = 0; i < p.iterations && ok; ++i) ok = once();
  out.seconds = since(t0);
  if (!ok) {
    out.left_requests = true;
    abandoned().push_back(data);
    abandoned().push_back(incoming);
    return out;
  }
  float base = 0;
  for (int r : group) base += static_cast<float>(r % 7 + 1);
  // Bit for bit: every rank adds the same small integers, exact in float.
  uint64_t wrong = 0;
  size_t first = 0;
  uint32_t expected_bits = 0, got_bits = 0;
  for (size_t i = 0; i < count; ++i) {
    const uint32_t want = std::bit_cast<uint32_t>(base + static_cast<float>(n) * static_cast<float>(i % 5));
    const uint32_t got = std::bit_cast<uint32_t>((*data)[i]);
    if (want == got) continue;
    if (wrong++ == 0) std::tie(first, expected_bits, got_bits) = std::tuple(i, want, got);
  }
  if (wrong) {
    out.corruption = fmt::format("allreduce of {} ranks: wrong results in {} of {} elements; first element {}: expected {:#010x}, "
                                 "received {:#010x} (bits {} differ)",
                                 n, wrong, count, first, expected_bits, got_bits, differing_bits(expected_bits ^ got_bits));
  }
  const double bytes = static_cast<double>(count * sizeof(float));
  if (out.seconds > 0) out.gbytes_per_s = bytes * p.iterations / out.seconds / 1e9 * 2.0 * (n - 1) / n;
  return out;
}

ProbeResult probe_stream(MPI_Comm comm, int peer, const StreamProbe& p, int tag, Deadline deadline,
                         const std::vector<std::string>& hosts) {
  ProbeResult out;
  const size_t count = std::max<size_t>(1, p.bytes / sizeof(float));
  const size_t w = static_cast<size_t>(std::max(1, p.window));
  auto send = std::make_shared<std::vector<float>>(count, 1.0f);
  auto recv = std::make_shared<std::vector<float>>(count * w);
  const auto t0 = Clock::now();
  for (int it = 0; it < p.iterations; ++it) {
    std::vector<MPI_Request> req(2 * w);
    for (size_t i = 0; i < w; ++i) {
      MPI_Irecv(recv->data() + i * count, static_cast<int>(count), MPI_FLOAT, peer, tag, comm, &req[i]);
    }
    for (size_t i = 0; i < w; ++i) {
      MPI_Isend(send->data(), static_cast<int>(count), MPI_FLOAT, peer, tag, comm, &req[w + i]);
    }
    if (!wait_all(req, w, deadline)) {
      out.error = fmt::format("stream with {}: not done by the deadline ({} of {} windows)", name(peer, hosts), it,
                              p.iterations);
      out.left_requests = true;
      abandoned().push_back(send);
      abandoned().push_back(recv);
      return out;
    }
  }
  out.seconds = since(t0);
  const double moved = 2.0 * static_cast<double>(count * sizeof(float) * w) * p.iterations;
  if (out.seconds > 0) out.gbytes_per_s = moved / out.seconds / 1e9;
  return out;
}

}  // namespace smddp::diag
