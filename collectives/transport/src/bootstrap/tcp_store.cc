// The TCP store's client side (tcp_store.h): connecting with retries,
// joining, and the blocking request/reply calls the bootstrap uses.
#include "bootstrap/tcp_store.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <thread>

#include "smddp/error.h"
#include "bootstrap/tcp_store_auth.h"
#include "bootstrap/tcp_store_server.h"

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
  // Bind exactly where the others will connect (MASTER_ADDR's own address,
  // not every interface), or where SMDDP_STORE_BIND_ADDR says.
  const bool named = !config_.bind_addr.empty();
  const std::string& addr = named ? config_.bind_addr : config_.master_addr;
  const std::string what = named ? "SMDDP_STORE_BIND_ADDR=" + addr : "MASTER_ADDR=" + addr;
  std::string error;
  std::vector<net::Endpoint> endpoints = net::resolve(addr, config_.master_port, &error);
  if (endpoints.empty()) throw TransportError("TCP store: rank 0 cannot resolve " + what + ": " + error);
  store::ServerOptions options{config_.world_size, std::min(config_.timeout_seconds, kMaxLingerSeconds),
                               config_.secret, config_.client_timeout_seconds};
  // The first address that works.
  for (size_t i = 0; i < endpoints.size() && !server_; ++i) {
    try {
      server_ = std::make_unique<store::Server>(endpoints[i], what + " port " + std::to_string(config_.master_port) +
                                                                  " (" + endpoints[i].text() + ")",
                                                options);
    } catch (const TransportError&) {
      if (i + 1 == endpoints.size()) throw;
    }
  }
  if (config_.secret.empty()) {
    std::fprintf(stderr,
                 "smddp: warning: the TCP store on %s is unauthenticated: any process that reaches it can join or "
                 "disrupt the job (set SMDDP_STORE_SECRET or SMDDP_STORE_SECRET_FILE on every rank)\n",
                 where().c_str());
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

store::Challenge TcpStore::read_challenge(Clock::time_point deadline) {
  int err = 0;
  char head_bytes[store::kHeadBytes];
  net::Io io = net::recv_all(fd_.get(), head_bytes, sizeof head_bytes, deadline + kReplyGrace, &err);
  store::Head head;
  std::string payload;
  if (io == net::Io::Ok) {
    if (!store::parse_head(head_bytes, &head) || head.code != static_cast<uint8_t>(Status::Challenge) ||
        head.length > store::kMaxHandshakePayload) {
      throw TransportError("TCP store: " + where() + " does not begin as an smddp TCP store does " +
                           "(another service on MASTER_PORT, or an older smddp?)");
    }
    payload.resize(head.length);
    io = net::recv_all(fd_.get(), payload.data(), payload.size(), deadline + kReplyGrace, &err);
  }
  if (io == net::Io::Timeout) {
    throw TimeoutError("TCP store: no handshake from rank 0 at " + where() + " within " +
                       seconds_text(config_.timeout_seconds));
  }
  if (io != net::Io::Ok) {
    throw TransportError("TCP store: lost the connection to rank 0 at " + where() + " during the handshake" +
                         (io == net::Io::Error ? ": " + net::errno_text(err) : std::string()));
  }
  try {
    return store::decode_challenge(payload);
  } catch (const store::WireError& e) {
    throw TransportError("TCP store: " + where() + ": " + e.what());
  }
}

void TcpStore::join(Clock::time_point deadline) {
  const store::Challenge challenge = read_challenge(deadline);
  const bool required = challenge.flags & store::kFlagSecretRequired;
  const std::string me = "rank " + std::to_string(config_.rank);
  if (required && config_.secret.empty()) {
    throw UsageError("TCP store: rank 0's store at " + where() + " requires SMDDP_STORE_SECRET, which " + me +
                     " lacks (set SMDDP_STORE_SECRET or SMDDP_STORE_SECRET_FILE on every rank)");
  }
  if (!required && !config_.secret.empty()) {
    throw UsageError("TCP store: " + me + " has SMDDP_STORE_SECRET, but the store at " + where() +
                     " runs without one (set it on rank 0 too)");
  }
  store::Hello hello{static_cast<uint32_t>(config_.rank), static_cast<uint32_t>(config_.world_size), config_.host,
                     store::random_nonce(), ""};
  if (required) hello.proof = store::client_proof(config_.secret, challenge.nonce, hello);
  Reply r = request(Op::Hello, store::encode(hello), deadline);
  if (r.status == Status::Denied) {
    std::string why = "malformed reply";
    try {
      why = store::Reader(r.payload).str();
    } catch (const store::WireError&) {
    }
    throw UsageError("TCP store: " + why);
  }
  if (r.status != Status::Ok) fail(r, "joining");
  if (required) {
    std::string proof;
    try {
      proof = store::Reader(r.payload).str();
    } catch (const store::WireError&) {
    }
    if (!store::server_is_authentic(config_.secret, challenge.nonce, hello, proof)) {
      throw TransportError("TCP store: the store at " + where() +
                           " could not prove it knows SMDDP_STORE_SECRET: not this job's rank 0");
    }
  }
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
    const std::string note = in.done() ? "" : "; " + in.str();
    throw TimeoutError("TCP store: only " + std::to_string(config_.world_size - static_cast<int>(missing.size())) +
                       " of WORLD_SIZE=" + std::to_string(config_.world_size) + " ranks joined at " + where() +
                       " within " + seconds_text(config_.timeout_seconds) + " (missing " + missing_ranks(missing) +
                       note + "): start every rank, or fix WORLD_SIZE");
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
  if (frame.size() - store::kHeadBytes > store::kMaxRequest) {
    throw TransportError("TCP store: rank " + std::to_string(config_.rank) + " would send " +
                         std::to_string(frame.size() - store::kHeadBytes) + " bytes, more than the store takes (" +
                         std::to_string(store::kMaxRequest) + ")");
  }
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
