// A small key-value store over TCP: where the ranks of a torchrun-style job
// (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT; no mpirun) meet. Rank 0
// serves it on MASTER_ADDR:MASTER_PORT from a thread (tcp_store_server.h);
// every rank, rank 0 included, is a client with one connection.
//
// Joining is part of construction: each rank says Hello (its RANK,
// WORLD_SIZE and host) and waits until all WORLD_SIZE ranks have joined, so
// a wrong WORLD_SIZE or an unreachable MASTER_ADDR is one clear error
// within the timeout, before any collective runs. Errors: UsageError when
// the ranks' settings contradict each other, TimeoutError when ranks are
// missing at the deadline, TransportError when the store cannot be reached
// or its connection breaks.
//
// With a secret every connection starts with a challenge-response both
// ways (tcp_store_auth.h): a rank whose secret differs is refused
// (UsageError naming SMDDP_STORE_SECRET), and a server that cannot prove
// the secret is not believed. Without one rank 0 warns once that the store
// is open to anyone who reaches it, as torchrun's is.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "smddp/common/socket_io.h"
#include "bootstrap/tcp_store_wire.h"

namespace smddp {

namespace store {
class Server;
}

struct TcpStoreConfig {
  std::string master_addr;
  int master_port = 0;
  int rank = 0;
  int world_size = 1;
  std::string host;              // this process's host name, for messages
  double timeout_seconds = 60;   // connect + join, and each later wait
  std::string secret;            // shared by every rank; empty: none
  std::string bind_addr;         // rank 0: where the store listens; empty: MASTER_ADDR
  double client_timeout_seconds = 10;  // the store's limit for a handshake or a message
};

class TcpStore {
 public:
  explicit TcpStore(const TcpStoreConfig& config);
  ~TcpStore();

  TcpStore(const TcpStore&) = delete;
  TcpStore& operator=(const TcpStore&) = delete;

  void set(const std::string& key, const std::string& value);
  // Waits until every key exists; values in the order of `keys`.
  std::vector<std::string> get(const std::vector<std::string>& keys);
  int64_t add(const std::string& key, int64_t delta);

  // The numeric local address of the connection to the store: the
  // interface this rank reaches rank 0 through, which peers can usually
  // reach it on too.
  const std::string& local_address() const { return local_address_; }
  // "MASTER_ADDR:MASTER_PORT (host:port)" for messages.
  std::string where() const;

 private:
  struct Reply {
    store::Status status = store::Status::Ok;
    std::string payload;
  };
  void start_server_and_connect(net::Clock::time_point deadline);
  void connect(net::Clock::time_point deadline);
  // Reads the store's Challenge, says Hello with this rank's proof and
  // checks the store's; then waits until every rank has joined.
  void join(net::Clock::time_point deadline);
  store::Challenge read_challenge(net::Clock::time_point deadline);
  // Sends one request and reads its reply; the reply may take until
  // `deadline` (plus a grace for the server's own answer to arrive).
  Reply request(store::Op op, const store::Writer& payload, net::Clock::time_point deadline);
  // Throws the error a non-Ok reply carries.
  [[noreturn]] void fail(const Reply& reply, const std::string& doing) const;

  TcpStoreConfig config_;
  net::Fd fd_;
  std::string local_address_;
  // Rank 0 only. Declared last so it stops first, also when the constructor
  // throws: ranks still waiting hear what is missing, not that rank 0 left.
  std::unique_ptr<store::Server> server_;
};

}  // namespace smddp
