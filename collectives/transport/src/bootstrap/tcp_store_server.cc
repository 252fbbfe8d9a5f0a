// The TCP store's server thread (tcp_store_server.h). One poll() loop owns
// every connection; nothing is shared with the caller's thread but the stop
// flag and a wake-up pipe. Vocabulary: a client is one connection (one rank
// once it said Hello); a waiter is a client whose Get still misses keys;
// `waiters_` maps each missing key to the waits that need it, tagged with
// the wait's generation so a finished wait's leftovers are ignored. A key
// ending in "/R" is owned by rank R (the bootstrap's keys are named so): a
// wait for it fails as soon as rank R leaves, while waits for keys of live
// ranks go on to their deadline, as a slow rank is no error.
//
// Before its Hello proves the secret (tcp_store_auth.h) a client is a
// stranger: it may send one Hello of at most kMaxHandshakePayload bytes
// within the client timeout, and at most kMaxStrangers - world size of them
// wait at a time (the oldest goes first). No client's bytes are ever
// waited for: a partial message only sits in its buffer until its deadline.
#include "bootstrap/tcp_store_server.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <map>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "smddp/error.h"
#include "bootstrap/tcp_store_auth.h"
#include "bootstrap/tcp_store_wire.h"

namespace smddp::store {

using net::Clock;

namespace {

constexpr int kFlushSecondsAtStop = 3;
constexpr size_t kMaxStrangers = 64;
constexpr int kMaxDropLines = 10;

struct Client {
  uint64_t id = 0;
  net::Fd fd;
  std::string peer;  // "address:port", for messages
  std::string nonce;  // of the Challenge sent on accept
  bool authenticated = false;
  bool sent_anything = false;
  Clock::time_point handshake_deadline;
  Clock::time_point partial_since;  // when `in` last became non-empty
  std::string in, out;
  int claimed = -1;  // the RANK its Hello named, accepted or not
  int rank = -1;     // once accepted
  std::string host;
  bool dead = false;
  // The Get being waited on.
  bool waiting = false;
  uint64_t wait_gen = 0;
  std::vector<std::string> keys;
  size_t missing = 0;
  Clock::time_point deadline;
};

std::string who(int rank, const std::string& host) {
  return "rank " + std::to_string(rank) + " (on " + host + ")";
}

// The rank a key belongs to ("ag/3/5" -> 5), or -1.
int owner_of(const std::string& key) {
  size_t slash = key.rfind('/');
  if (slash == std::string::npos || slash + 1 == key.size() || key.size() - slash > 9) return -1;
  int r = 0;
  for (size_t i = slash + 1; i < key.size(); ++i) {
    if (key[i] < '0' || key[i] > '9') return -1;
    r = r * 10 + (key[i] - '0');
  }
  return r;
}

Clock::duration duration_of(double seconds) {
  return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
}

std::string seconds_text(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g s", s);
  return buf;
}

}  // namespace

class Server::State {
 public:
  explicit State(const ServerOptions& o)
      : world_size_(o.world_size),
        linger_(duration_of(o.linger_seconds)),
        secret_(o.secret),
        client_timeout_seconds_(o.client_timeout_seconds),
        client_timeout_(duration_of(o.client_timeout_seconds)),
        hosts_(o.world_size) {}

  // Phases after stop: with a configuration error not yet told to every
  // rank, go on serving (answering each late rank with it) for a while;
  // then send what is queued and end.
  void run(int listener, int wake, const std::atomic<bool>& stop) {
    enum class Phase { Serving, Lingering, Flushing } phase = Phase::Serving;
    Clock::time_point until = Clock::time_point::max();
    std::vector<pollfd> fds;
    std::vector<uint64_t> ids;
    for (;;) {
      const auto now = Clock::now();
      if (phase == Phase::Serving && stop.load()) {
        // Rank 0 gave up: whoever still waits learns now what is missing.
        expire_waits(Clock::time_point::max());
        phase = Phase::Lingering;
        until = fatal_.empty() ? now : now + linger_;
      }
      if (phase == Phase::Lingering && (all_told() || now >= until)) {
        phase = Phase::Flushing;
        until = now + std::chrono::seconds(kFlushSecondsAtStop);
      }
      if (phase == Phase::Flushing && (nothing_to_send() || now >= until)) return;
      const bool serving = phase != Phase::Flushing;
      fds.assign({pollfd{wake, POLLIN, 0}, pollfd{listener, static_cast<short>(serving ? POLLIN : 0), 0}});
      ids.clear();
      for (auto& [id, c] : clients_) {
        short ev = serving ? POLLIN : 0;
        if (!c.out.empty()) ev |= POLLOUT;
        fds.push_back(pollfd{c.fd.get(), ev, 0});
        ids.push_back(id);
      }
      int n = ::poll(fds.data(), fds.size(), poll_timeout_ms(until, serving));
      if (n < 0 && errno != EINTR) return;
      if (fds[0].revents) drain_wake(wake);
      if (fds[1].revents & POLLIN) accept_all(listener);
      for (size_t i = 0; i < ids.size(); ++i) {
        auto it = clients_.find(ids[i]);
        if (it == clients_.end() || !fds[i + 2].revents) continue;
        if (fds[i + 2].revents & POLLOUT) flush(it->second);
        if (serving && (fds[i + 2].revents & (POLLIN | POLLHUP | POLLERR))) read_from(it->second);
      }
      expire_waits(Clock::now());
      if (serving) expire_clients(Clock::now());
      for (auto it = clients_.begin(); it != clients_.end();) {
        if (it->second.dead) {
          if (phase == Phase::Serving) departed(it->second);
          it = clients_.erase(it);
        } else {
          ++it;
        }
      }
    }
  }

  // replay_for_fuzzing (tcp_store_server.h): each connection is a socketpair
  // whose other end plays the client; read_from() runs as in run().
  std::string replay(const std::vector<std::pair<int, std::string>>& chunks) {
    report_drops_ = false;
    std::map<int, std::pair<uint64_t, net::Fd>> peers;  // connection -> client id, client end
    std::string sent;
    auto drain = [&sent](int fd) {
      char buf[65536];
      for (ssize_t n; (n = ::recv(fd, buf, sizeof buf, MSG_DONTWAIT)) > 0;) sent.append(buf, static_cast<size_t>(n));
    };
    for (const auto& [conn, bytes] : chunks) {
      if (!peers.count(conn)) {
        int sv[2];
        if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, sv) != 0) return sent;
        peers.emplace(conn, std::make_pair(admit(net::Fd(sv[0]), "connection " + std::to_string(conn)),
                                           net::Fd(sv[1])));
      }
      auto& [id, peer] = peers.at(conn);
      auto it = clients_.find(id);
      if (it == clients_.end()) continue;  // dropped earlier
      for (size_t done = 0; done < bytes.size() && !it->second.dead;) {
        const ssize_t n = ::send(peer.get(), bytes.data() + done, std::min<size_t>(bytes.size() - done, 16384),
                                 MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n <= 0) break;
        done += static_cast<size_t>(n);
        read_from(it->second);
        drain(peer.get());
      }
      expire_waits(Clock::now());
      if (it->second.dead) {
        departed(it->second);
        clients_.erase(it);
      }
    }
    expire_waits(Clock::time_point::max());
    for (auto& [conn, client] : peers) drain(client.second.get());
    for (auto it = clients_.begin(); it != clients_.end(); it = clients_.erase(it)) departed(it->second);
    return sent;
  }

 private:
  bool all_told() const { return static_cast<int>(told_.size()) >= world_size_; }

  bool nothing_to_send() const {
    for (const auto& [id, c] : clients_) {
      if (!c.out.empty() && !c.dead) return false;
    }
    return true;
  }

  // Until the next deadline: a wait's, and while serving a client's.
  int poll_timeout_ms(Clock::time_point limit, bool serving) const {
    for (const auto& [id, c] : clients_) {
      if (c.waiting && c.deadline < limit) limit = c.deadline;
      if (!serving) continue;
      if (!c.authenticated && c.handshake_deadline < limit) limit = c.handshake_deadline;
      if (!c.in.empty() && c.partial_since + client_timeout_ < limit) limit = c.partial_since + client_timeout_;
    }
    if (limit == Clock::time_point::max()) return 1000;
    return net::ms_left(limit, 1000) + 1;
  }

  static void drain_wake(int wake) {
    char buf[64];
    while (::read(wake, buf, sizeof buf) > 0) {
    }
  }

  void accept_all(int listener) {
    for (;;) {
      net::Fd fd = net::accept_nonblocking(listener);
      if (!fd) return;
      net::set_nonblocking(fd.get(), true);
      net::set_nodelay(fd.get());
      const std::string peer = net::peer_text(fd.get());
      admit(std::move(fd), peer);
      limit_strangers();
    }
  }

  // A new connection, a stranger until its Hello: it gets the Challenge.
  uint64_t admit(net::Fd fd, const std::string& peer) {
    Client c;
    c.id = next_id_++;
    c.peer = peer;
    c.fd = std::move(fd);
    c.nonce = random_nonce();
    c.handshake_deadline = Clock::now() + client_timeout_;
    Client& added = clients_.emplace(c.id, std::move(c)).first->second;
    const uint32_t flags = secret_.empty() ? 0 : kFlagSecretRequired;
    added.out = encode(Challenge{kVersion, flags, added.nonce});
    flush(added);
    return added.id;
  }

  // A flood of connections that never finish their handshake cannot use
  // up descriptors: past the limit the oldest stranger goes.
  void limit_strangers() {
    size_t strangers = 0;
    for (const auto& [id, c] : clients_) strangers += !c.authenticated && !c.dead;
    if (strangers <= kMaxStrangers + static_cast<size_t>(world_size_)) return;
    for (auto& [id, c] : clients_) {
      if (!c.authenticated && !c.dead) return drop(c, "too many connections without a handshake; the oldest goes");
    }
  }

  // Closes a client's connection; `why` (for a stranger that misbehaved)
  // is one line on stderr, for the first few only.
  void drop(Client& c, const std::string& why) {
    c.dead = true;
    if (why.empty() || !report_drops_) return;
    if (++dropped_ <= kMaxDropLines) {
      std::fprintf(stderr, "smddp: TCP store on rank 0: dropped the connection from %s: %s\n", c.peer.c_str(),
                   why.c_str());
    } else if (dropped_ == kMaxDropLines + 1) {
      std::fprintf(stderr, "smddp: TCP store on rank 0: dropped more connections; further ones are not reported\n");
    }
  }

  void read_from(Client& c) {
    char buf[65536];
    for (;;) {
      ssize_t n = ::recv(c.fd.get(), buf, sizeof buf, MSG_DONTWAIT);
      if (n > 0) {
        if (c.in.empty()) c.partial_since = Clock::now();
        c.in.append(buf, static_cast<size_t>(n));
        c.sent_anything = true;
        consume(c);  // at most one frame's limit is ever buffered
        if (c.dead) return;
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
      // EOF or a broken connection; a probe that sent nothing is no news.
      drop(c, !c.authenticated && c.sent_anything ? "closed the connection before its handshake ended" : "");
      break;
    }
  }

  // Handles every whole frame in c.in.
  void consume(Client& c) {
    while (!c.dead && !c.in.empty()) {
      const uint32_t limit = c.authenticated ? kMaxRequest : kMaxHandshakePayload;
      Head head;
      std::string_view view;
      size_t used = 0;
      switch (next_frame(c.in, limit, &head, &view, &used)) {
        case FrameState::Incomplete:
          return;
        case FrameState::Bad:
          return drop(c, c.in.size() >= kHeadBytes && parse_head(c.in.data(), &head)
                             ? "a message of " + std::to_string(head.length) + " bytes, over the limit of " +
                                   std::to_string(limit) + (c.authenticated ? "" : " before the handshake")
                             : "bytes that are not the smddp TCP store protocol");
        case FrameState::Ready:
          break;
      }
      std::string payload(view);
      c.in.erase(0, used);
      if (!c.in.empty()) c.partial_since = Clock::now();
      if (!c.authenticated) {
        handshake(c, static_cast<Op>(head.code), payload);
        continue;
      }
      try {
        handle(c, static_cast<Op>(head.code), payload);
      } catch (const std::exception& e) {  // malformed request (WireError, bad number)
        reply(c, Status::Error, Writer().str(e.what()));
        c.dead = true;
      }
    }
  }

  // A stranger's first frame: a Hello whose proof of the secret holds, or
  // the connection is dropped.
  void handshake(Client& c, Op op, const std::string& payload) {
    if (op != Op::Hello) return drop(c, "request " + std::to_string(static_cast<int>(op)) + " before its Hello");
    Hello h;
    try {
      h = decode_hello(payload);
    } catch (const WireError& e) {
      return drop(c, std::string("a malformed Hello (") + e.what() + ")");
    }
    if (!secret_.empty() && !hello_is_authentic(secret_, c.nonce, h)) {
      ++denied_;
      reply(c, Status::Denied,
            Writer().str("rank 0 refused the handshake of rank " + std::to_string(h.rank) +
                         ": its SMDDP_STORE_SECRET differs from rank 0's"));
      return drop(c, "a Hello as rank " + std::to_string(h.rank) + " with a wrong proof of SMDDP_STORE_SECRET");
    }
    c.authenticated = true;
    hello(c, static_cast<int>(h.rank), static_cast<int>(h.world_size), h.host,
          secret_.empty() ? std::string() : server_proof(secret_, c.nonce, h));
  }

  // Drops strangers past their handshake deadline, and anyone whose
  // message stopped halfway.
  void expire_clients(Clock::time_point now) {
    for (auto& [id, c] : clients_) {
      if (c.dead) continue;
      if (!c.authenticated && now >= c.handshake_deadline) {
        drop(c, "no handshake within " + seconds_text(client_timeout_seconds_) + " (SMDDP_STORE_HANDSHAKE_TIMEOUT)");
      } else if (!c.in.empty() && now >= c.partial_since + client_timeout_) {
        drop(c, "a message begun and not finished within " + seconds_text(client_timeout_seconds_) +
                    " (SMDDP_STORE_HANDSHAKE_TIMEOUT)");
      }
    }
  }

  void handle(Client& c, Op op, const std::string& payload) {
    Reader r(payload);
    switch (op) {
      case Op::Hello:
        throw WireError("a second Hello on one connection");
      case Op::Set: {
        std::string key = r.str();
        std::string value = r.str();
        set(key, std::move(value));
        reply(c, Status::Ok, Writer());
        return;
      }
      case Op::Get: {
        uint32_t timeout_ms = r.u32();
        uint32_t n = r.u32();
        std::vector<std::string> keys;
        for (uint32_t i = 0; i < n; ++i) keys.push_back(r.str());
        get(c, std::move(keys), timeout_ms);
        return;
      }
      case Op::Add: {
        std::string key = r.str();
        int64_t delta = r.i64();
        auto it = kv_.find(key);
        int64_t value = 0;
        if (__builtin_add_overflow(it == kv_.end() ? 0 : std::stoll(it->second), delta, &value)) {
          throw WireError("TCP store Add on " + key + " overflows a 64-bit counter");
        }
        set(key, std::to_string(value));
        reply(c, Status::Ok, Writer().i64(value));
        return;
      }
    }
    throw WireError("unknown TCP store request " + std::to_string(static_cast<int>(op)));
  }

  void hello(Client& c, int rank, int world, const std::string& host, const std::string& proof) {
    c.claimed = rank;
    if (fatal_.empty() && world != world_size_) {
      fatal_ = "ranks disagree on WORLD_SIZE: " + (hosts_[0].empty() ? std::string("rank 0") : who(0, hosts_[0])) +
               " has " + std::to_string(world_size_) + ", " + who(rank, host) + " has " + std::to_string(world);
    } else if (fatal_.empty() && (rank < 0 || rank >= world_size_)) {
      fatal_ = "RANK=" + std::to_string(rank) + " on " + host + " is outside WORLD_SIZE=" + std::to_string(world_size_);
    } else if (fatal_.empty() && !hosts_[rank].empty()) {
      fatal_ = "two processes have RANK=" + std::to_string(rank) + " (on " + hosts_[rank] + " and on " + host + ")";
    }
    if (!fatal_.empty()) {
      fail_waiters(Status::Invalid, fatal_);
      reply(c, Status::Invalid, Writer().str(fatal_));
      return;
    }
    c.rank = rank;
    c.host = host;
    hosts_[rank] = host;
    set("join/" + std::to_string(rank), host);
    reply(c, Status::Ok, Writer().str(proof));
  }

  void set(const std::string& key, std::string value) {
    kv_[key] = std::move(value);
    auto it = waiters_.find(key);
    if (it == waiters_.end()) return;
    auto waits = std::move(it->second);
    waiters_.erase(it);
    for (auto [id, gen] : waits) {
      auto c = clients_.find(id);
      if (c == clients_.end() || !c->second.waiting || c->second.wait_gen != gen) continue;
      if (--c->second.missing == 0) answer(c->second);
    }
  }

  void get(Client& c, std::vector<std::string> keys, uint32_t timeout_ms) {
    if (!fatal_.empty()) return reply(c, Status::Invalid, Writer().str(fatal_));
    c.keys = std::move(keys);
    c.missing = 0;
    c.wait_gen = ++generation_;
    for (const auto& k : c.keys) {
      if (kv_.count(k)) continue;
      ++c.missing;
      waiters_[k].emplace_back(c.id, c.wait_gen);
    }
    if (c.missing == 0) return answer(c);
    for (const auto& k : c.keys) {
      auto gone = left_.find(owner_of(k));
      if (gone != left_.end() && !kv_.count(k)) return reply(c, Status::Error, Writer().str(gone->second));
    }
    c.waiting = true;
    c.deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
  }

  void answer(Client& c) {
    Writer w;
    w.u32(static_cast<uint32_t>(c.keys.size()));
    for (const auto& k : c.keys) w.str(kv_.at(k));
    c.waiting = false;
    reply(c, Status::Ok, w);
  }

  // Answers, with the keys still missing, every wait due by `now`.
  void expire_waits(Clock::time_point now) {
    for (auto& [id, c] : clients_) {
      if (!c.waiting || c.deadline > now) continue;
      std::vector<std::string> missing;
      for (const auto& k : c.keys) {
        if (!kv_.count(k)) missing.push_back(k);
      }
      Writer w;
      w.u32(static_cast<uint32_t>(missing.size()));
      for (const auto& k : missing) w.str(k);
      if (denied_) {  // a likely reason the keys are missing
        w.str(std::to_string(denied_) + (denied_ == 1 ? " connection was" : " connections were") +
              " refused for a wrong SMDDP_STORE_SECRET");
      }
      c.waiting = false;
      reply(c, Status::Timeout, w);
    }
  }

  void fail_waiters(Status status, const std::string& message) {
    for (auto& [id, c] : clients_) {
      if (!c.waiting) continue;
      c.waiting = false;
      reply(c, status, Writer().str(message));
    }
  }

  // A rank that leaves before setting a key someone waits for has died (in
  // the bootstrap every rank sets its keys before any rank can finish).
  void departed(const Client& c) {
    if (c.rank < 0) return;
    const std::string gone = who(c.rank, c.host) + " left the job (its process ended or its connection broke)";
    left_[c.rank] = gone;
    for (auto& [id, w] : clients_) {
      if (!w.waiting || w.dead) continue;
      for (const auto& k : w.keys) {
        if (owner_of(k) == c.rank && !kv_.count(k)) {
          w.waiting = false;
          reply(w, Status::Error, Writer().str(gone));
          break;
        }
      }
    }
  }

  void reply(Client& c, Status status, const Writer& payload) {
    if (status == Status::Invalid && c.claimed >= 0 && c.claimed < world_size_) told_.insert(c.claimed);
    c.out += payload.frame(static_cast<uint8_t>(status));
    flush(c);
  }

  void flush(Client& c) {
    while (!c.out.empty() && !c.dead) {
      ssize_t n = ::send(c.fd.get(), c.out.data(), c.out.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
      if (n > 0) {
        c.out.erase(0, static_cast<size_t>(n));
      } else if (n < 0 && errno == EINTR) {
        continue;
      } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
        return;
      } else {
        c.dead = true;
      }
    }
  }

  const int world_size_;
  const Clock::duration linger_;
  const std::string secret_;
  const double client_timeout_seconds_;
  const Clock::duration client_timeout_;
  bool report_drops_ = true;
  int dropped_ = 0;   // connections dropped with a line on stderr
  uint64_t denied_ = 0;  // Hellos with a wrong proof
  std::vector<std::string> hosts_;  // by rank, once joined
  std::map<uint64_t, Client> clients_;
  uint64_t next_id_ = 1;
  uint64_t generation_ = 0;
  std::unordered_map<std::string, std::string> kv_;
  std::unordered_map<std::string, std::vector<std::pair<uint64_t, uint64_t>>> waiters_;
  std::string fatal_;                // the job cannot work: every wait fails with this
  std::set<int> told_;               // ranks that got fatal_
  std::map<int, std::string> left_;  // ranks that left, and how to say so
};

std::string replay_for_fuzzing(int world_size, const std::vector<std::pair<int, std::string>>& chunks) {
  return Server::State(ServerOptions{world_size, 0, "", 10}).replay(chunks);
}

Server::Server(const net::Endpoint& endpoint, const std::string& where, const ServerOptions& options)
    : state_(std::make_unique<State>(options)) {
  int err = 0;
  listener_ = net::listen_on(endpoint, &err);
  if (!listener_) {
    throw TransportError("TCP store: rank 0 cannot listen on " + where + ": " + net::errno_text(err) +
                         (err == EADDRINUSE ? " (another process holds MASTER_PORT; pick a free one)"
                          : err == EADDRNOTAVAIL ? " (not an address of rank 0's host; set SMDDP_STORE_BIND_ADDR to "
                                                   "one that is, or 0.0.0.0 for every interface)"
                                                 : ""));
  }
  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_CLOEXEC | O_NONBLOCK) != 0) {
    throw TransportError("TCP store: pipe: " + net::errno_text(errno));
  }
  wake_read_ = net::Fd(pipe_fds[0]);
  wake_write_ = net::Fd(pipe_fds[1]);
  thread_ = std::thread([this] {
    try {
      state_->run(listener_.get(), wake_read_.get(), stop_);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "smddp: TCP store server stopped: %s\n", e.what());
    }
  });
}

Server::~Server() {
  stop_.store(true);
  char b = 1;
  (void)!::write(wake_write_.get(), &b, 1);
  if (thread_.joinable()) thread_.join();
}

}  // namespace smddp::store
