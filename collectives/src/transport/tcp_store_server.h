// The TCP store's server: rank 0 runs it on a thread of its own, so that
// other ranks are answered while rank 0 itself computes. It holds a map of
// keys to values, answers Get once every key asked for exists (or when the
// asker's time runs out), and fails every waiter at once when the job
// cannot work: ranks that disagree on WORLD_SIZE, two processes with one
// RANK, or a rank that leaves while others still wait for its keys.
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "transport/socket_io.h"

namespace smddp::store {

class Server {
 public:
  // Listens on exactly `endpoint`; throws TransportError naming `where`
  // (e.g. "MASTER_ADDR:MASTER_PORT 10.0.0.1:29500") when it cannot.
  Server(const net::Endpoint& endpoint, const std::string& where, int world_size, double linger_seconds);
  // Answers whoever still waits with the keys missing, sends what is
  // queued (a few seconds at most), then stops. After a configuration error
  // (WORLD_SIZE disagreement, a RANK twice) it first goes on answering late
  // ranks with that error, for at most `linger_seconds`, until every rank
  // has heard it.
  ~Server();

  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  class State;  // the thread's data (tcp_store_server.cc)

 private:
  net::Fd listener_;
  net::Fd wake_read_, wake_write_;
  std::unique_ptr<State> state_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

// fuzz/tcp_store_server.cc's way into the request handling, without a thread
// or a listener: a server of `world_size` ranks receives each chunk's bytes
// on connection chunk.first (opened when first named, all closed at the end)
// as recv() would deliver them. Returns every byte it sent back.
std::string replay_for_fuzzing(int world_size, const std::vector<std::pair<int, std::string>>& chunks);

}  // namespace smddp::store
