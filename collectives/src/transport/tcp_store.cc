// The TCP store's client side (tcp_store.h): connecting with retries,
// joining, and the blocking request/reply calls the bootstrap uses.
#include "transport/tcp_store.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <thread>

#include "smddp/error.h"
#include "transport/tcp_store_server.h"

namespace smddp {

using net::Clock;
using store::Op;
using store::Status;

namespace {

// How long past its own deadline a client waits for the server's answer.
constexpr auto kReplyGrace = std::chrono::seconds(5);
constexpr int kMaxAttemptMs = 2000;
// How long rank 0 stays to tell late ranks about a configuration error.
constexpr double kMaxLingerSeconds = 30;

std::string seconds_text(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g s", s);
  return buf;
}

// "rank 4" / "ranks 3, 4" / "ranks 0, 1, ... and 90 more" from "join/N" keys.
std::string missing_ranks(const std::vector<std::string>& keys) {
  std::string out = keys.size() == 1 ? "rank " : "ranks ";
  for (size_t i = 0; i < keys.size() && i < 10; ++i) {
    if (i) out += ", ";
    out += keys[i].substr(keys[i].find('/') + 1);
  }
  if (keys.size() > 10) out += " and " + std::to_string(keys.size() - 10) + " more";
  return out;
}

}  // namespace

TcpStore::TcpStore(const TcpStoreConfig& config) : config_(config) {
  const auto deadline = net::deadline_in(config_.timeout_seconds);
  if (config_.rank == 0) start_server_and_connect(deadline);
  else connect(deadline);
  join(deadline);
}

TcpStore::~TcpStore() = default;

std::string TcpStore::where() const {
  return "MASTER_ADDR:MASTER_PORT (" + config_.master_addr + ":" + std::to_string(config_.master_port) + ")";
}

void TcpStore::start_server_and_connect(Clock::time_point deadline) {
  std::string error;
  std::vector<net::Endpoint> endpoints = net::resolve(config_.master_addr, config_.master_port, &error);
  if (endpoints.empty()) {
    throw TransportError("TCP store: rank 0 cannot resolve MASTER_ADDR=" + config_.master_addr + ": " + error);
  }
  // Bind exactly where the others will connect: the first address that works.
  for (size_t i = 0; i < endpoints.size() && !server_; ++i) {
    try {
      server_ = std::make_unique<store::Server>(endpoints[i], where(), config_.world_size,
                                                std::min(config_.timeout_seconds, kMaxLingerSeconds));
    } catch (const TransportError&) {
      if (i + 1 == endpoints.size()) throw;
    }
  }
  connect(deadline);
}

void TcpStore::connect(Clock::time_point deadline) {
  std::string error = "no attempt";
  auto pause = std::chrono::milliseconds(50);
  for (;;) {
    std::vector<net::Endpoint> endpoints = net::resolve(config_.master_addr, config_.master_port, &error);
    for (const auto& ep : endpoints) {
      int err = 0;
      net::Fd fd = net::connect_once(ep, std::max(1, net::ms_left(deadline, kMaxAttemptMs)), &err);
      if (fd) {
        net::set_nodelay(fd.get());
        local_address_ = net::local_host(fd.get());
        fd_ = std::move(fd);
        return;
      }
      error = net::errno_text(err);
    }
    if (Clock::now() + pause >= deadline) break;
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::milliseconds(1000));
  }
  throw TransportError("TCP store: rank " + std::to_string(config_.rank) + " cannot reach rank 0 at " + where() +
                       " within " + seconds_text(config_.timeout_seconds) + ": " + error +
                       " (is rank 0 running, and are MASTER_ADDR and MASTER_PORT the same on every rank?)");
}

void TcpStore::join(Clock::time_point deadline) {
  store::Writer hello;
  hello.u32(static_cast<uint32_t>(config_.rank)).u32(static_cast<uint32_t>(config_.world_size)).str(config_.host);
  Reply r = request(Op::Hello, hello, deadline);
  if (r.status != Status::Ok) fail(r, "joining");
  std::vector<std::string> keys;
  for (int i = 0; i < config_.world_size; ++i) keys.push_back("join/" + std::to_string(i));
  store::Writer get;
  get.u32(static_cast<uint32_t>(net::ms_left(deadline))).u32(static_cast<uint32_t>(keys.size()));
  for (const auto& k : keys) get.str(k);
  r = request(Op::Get, get, deadline);
  if (r.status == Status::Timeout) {
    store::Reader in(r.payload);
    std::vector<std::string> missing(in.count());
    for (auto& k : missing) k = in.str();
    throw TimeoutError("TCP store: only " + std::to_string(config_.world_size - static_cast<int>(missing.size())) +
                       " of WORLD_SIZE=" + std::to_string(config_.world_size) + " ranks joined at " + where() +
                       " within " + seconds_text(config_.timeout_seconds) + " (missing " + missing_ranks(missing) +
                       "): start every rank, or fix WORLD_SIZE");
  }
  if (r.status != Status::Ok) fail(r, "joining");
}

void TcpStore::set(const std::string& key, const std::string& value) {
  store::Writer w;
  w.str(key).str(value);
  Reply r = request(Op::Set, w, net::deadline_in(config_.timeout_seconds));
  if (r.status != Status::Ok) fail(r, "setting " + key);
}

std::vector<std::string> TcpStore::get(const std::vector<std::string>& keys) {
  const auto deadline = net::deadline_in(config_.timeout_seconds);
  store::Writer w;
  w.u32(static_cast<uint32_t>(net::ms_left(deadline))).u32(static_cast<uint32_t>(keys.size()));
  for (const auto& k : keys) w.str(k);
  Reply r = request(Op::Get, w, deadline);
  if (r.status != Status::Ok) fail(r, "waiting for " + (keys.empty() ? std::string("nothing") : keys.front()));
  store::Reader in(r.payload);
  std::vector<std::string> values(in.count());
  for (auto& v : values) v = in.str();
  return values;
}

int64_t TcpStore::add(const std::string& key, int64_t delta) {
  store::Writer w;
  w.str(key).i64(delta);
  Reply r = request(Op::Add, w, net::deadline_in(config_.timeout_seconds));
  if (r.status != Status::Ok) fail(r, "adding to " + key);
  return store::Reader(r.payload).i64();
}

TcpStore::Reply TcpStore::request(Op op, const store::Writer& payload, Clock::time_point deadline) {
  const std::string frame = payload.frame(static_cast<uint8_t>(op));
  const auto reply_deadline = deadline + kReplyGrace;
  int err = 0;
  net::Io io = net::send_all(fd_.get(), frame.data(), frame.size(), reply_deadline, &err);
  char head_bytes[store::kHeadBytes];
  if (io == net::Io::Ok) io = net::recv_all(fd_.get(), head_bytes, sizeof head_bytes, reply_deadline, &err);
  store::Head head;
  Reply reply;
  if (io == net::Io::Ok) {
    if (!store::parse_head(head_bytes, &head)) {
      throw TransportError("TCP store: " + where() + " answered with something that is not an smddp TCP store " +
                           "(another service on MASTER_PORT?)");
    }
    reply.status = static_cast<Status>(head.code);
    // Grown with what arrives: a garbled head cannot make this rank allocate
    // its length (up to 1 GiB) up front (found by fuzz/tcp_store_client.cc).
    for (size_t got = 0; io == net::Io::Ok && got < head.length;) {
      const size_t piece = std::min<size_t>(head.length - got, size_t{1} << 16);
      reply.payload.resize(got + piece);
      io = net::recv_all(fd_.get(), reply.payload.data() + got, piece, reply_deadline, &err);
      got += piece;
    }
  }
  switch (io) {
    case net::Io::Ok:
      return reply;
    case net::Io::Timeout:
      throw TimeoutError("TCP store: no answer from rank 0 at " + where() + " within " +
                         seconds_text(config_.timeout_seconds));
    case net::Io::Closed:
      throw TransportError("TCP store: lost the connection to rank 0 at " + where() +
                           " (rank 0 ended, or the network between us broke)");
    case net::Io::Error:
      break;
  }
  throw TransportError("TCP store: talking to rank 0 at " + where() + ": " + net::errno_text(err));
}

void TcpStore::fail(const Reply& reply, const std::string& doing) const {
  std::string message;
  try {
    if (reply.status == Status::Timeout) {
      store::Reader in(reply.payload);
      uint32_t n = in.u32();
      throw TimeoutError("TCP store: rank " + std::to_string(config_.rank) + " timed out after " +
                         seconds_text(config_.timeout_seconds) + " " + doing + " (" + std::to_string(n) +
                         " keys missing, first " + (n ? in.str() : std::string("?")) +
                         "): some rank has not reached this step");
    }
    message = store::Reader(reply.payload).str();
  } catch (const store::WireError&) {
    message = "malformed reply";
  }
  if (reply.status == Status::Invalid) throw UsageError("TCP store: " + message);
  throw TransportError("TCP store: " + message);
}

}  // namespace smddp
