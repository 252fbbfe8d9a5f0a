// The TCP store's server: rank 0 runs it on a thread of its own, so that
// other ranks are answered while rank 0 itself computes. It holds a map of
// keys to values, answers Get once every key asked for exists (or when the
// asker's time runs out), and fails every waiter at once when the job
// cannot work: ranks that disagree on WORLD_SIZE, two processes with one
// RANK, or a rank that leaves while others still wait for its keys.
//
// It never trusts a connection before its handshake (tcp_store_auth.h):
// one that sends something else, too much, or too slowly is dropped with
// one line on stderr, and the job goes on.
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "smddp/common/socket_io.h"

namespace smddp::store {

struct ServerOptions {
  int world_size = 1;
  double linger_seconds = 0;  // see ~Server
  std::string secret;         // empty: anyone may join, as under torchrun
  // A new connection's time to complete its handshake, and any
  // connection's to finish a message it began.
  double client_timeout_seconds = 10;
};

class Server {
 public:
  // Listens on exactly `endpoint`; throws TransportError naming `where`
  // (e.g. "MASTER_ADDR:MASTER_PORT 10.0.0.1:29500") when it cannot.
  Server(const net::Endpoint& endpoint, const std::string& where, const ServerOptions& options);
  // Answers whoever still waits with the keys missing, sends what is
  // queued (a few seconds at most), then stops. After a configuration error
  // (WORLD_SIZE disagreement, a RANK twice) it first goes on answering late
  // ranks with that error, for at most `linger_seconds`, until every rank
  // has heard it.
  ~Server();

  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  int port() const { return net::local_port(listener_.get()); }

  class State;  // the thread's data (tcp_store_server.cc)

 private:
  net::Fd listener_;
  net::Fd wake_read_, wake_write_;
  std::unique_ptr<State> state_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

// fuzz/tcp_store_server.cc's way into the request handling, without a thread
// or a listener: a server of `world_size` ranks (no secret) receives each
// chunk's bytes on connection chunk.first (opened when first named, all
// closed at the end) as recv() would deliver them. Every connection first
// gets a Challenge and must say Hello (with a 32-byte nonce) before
// anything else. Returns every byte it sent back.
std::string replay_for_fuzzing(int world_size, const std::vector<std::pair<int, std::string>>& chunks);

}  // namespace smddp::store
