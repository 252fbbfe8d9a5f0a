// The socket transport's hello on loopback, 3 ranks as threads over an
// in-process bootstrap, each rank every other's partner: while ranks 0 and
// 1 wait at setup for rank 2, strangers reach their listeners with
// garbage, a hello without a proof, a wrong proof for rank 2's slot, and
// silence; each is dropped, and once rank 2 comes every pair exchanges
// correct data. Ranks with different secrets all fail with the same line
// naming SMDDP_STORE_SECRET (the setup vote). Under a bootstrap with no
// secret of its own (mpirun), open_socket_transport draws one for the job:
// the same strangers are dropped there too. Without partners, connections
// are made on first use, only between the ranks that talk, and strangers
// are dropped while a rank waits for one.
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <stdlib.h>
#include <sys/resource.h>

#include <sys/socket.h>
#include <unistd.h>

#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "smddp/error.h"
#include "bootstrap/bootstrap.h"
#include "smddp/common/socket_io.h"
#include "transports/socket_transport.h"
#include "transports/transport.h"

namespace smddp {
namespace {

constexpr int kRanks = 3;
const std::string kSecret = "correct horse battery staple";

// The address records every rank publishes (socket_transport.cc's
// PeerRecord): the listener's port follows two 64-byte strings.
constexpr size_t kRecordBytes = 256;
int port_of(const std::string& record) {
  int32_t port = 0;
  std::memcpy(&port, record.data() + 128, sizeof port);
  return port;
}

// What the ranks share: one allgather at a time. The last rank's allgather
// of address records waits for `release()`, so the others wait in accept
// meanwhile.
class Exchange {
 public:
  void allgather(int rank, const void* in, void* out, size_t bytes) {
    std::unique_lock lock(mu_);
    const int round = round_;
    parts_[static_cast<size_t>(rank)].assign(static_cast<const char*>(in), bytes);
    if (++arrived_ == kRanks) {
      all_ = parts_;
      if (records_.empty() && bytes == kRecordBytes) records_ = all_;
      arrived_ = 0;
      ++round_;
      cv_.notify_all();
    }
    cv_.wait(lock, [&] { return round_ != round; });
    for (int r = 0; r < kRanks; ++r) std::memcpy(static_cast<char*>(out) + r * bytes, all_[r].data(), bytes);
    if (rank == kRanks - 1 && bytes == kRecordBytes) cv_.wait(lock, [&] { return released_; });
  }
  // The listeners' ports, once every rank has published its record.
  std::vector<int> ports() {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [&] { return !records_.empty(); });
    std::vector<int> out;
    for (const auto& r : records_) out.push_back(port_of(r));
    return out;
  }
  void release() {
    std::lock_guard lock(mu_);
    released_ = true;
    cv_.notify_all();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::string> parts_ = std::vector<std::string>(kRanks), all_, records_;
  int arrived_ = 0, round_ = 0;
  bool released_ = false;
};

class ThreadBootstrap final : public Bootstrap {
 public:
  ThreadBootstrap(Exchange& x, int rank) : x_(x), rank_(rank) {}
  int rank() const override { return rank_; }
  int size() const override { return kRanks; }
  void allgather(const void* in, void* out, size_t bytes) override { x_.allgather(rank_, in, out, bytes); }
  void barrier() override {}
  int shared_memory_key() override { return rank_; }
  std::unique_ptr<Transport> make_network_transport() override { return nullptr; }

 private:
  Exchange& x_;
  int rank_;
};

// Every rank sends each other rank (of `with`, default all) 1000 ints of
// (sender * 1000 + receiver) and checks what it receives; "" when all is
// right, else why not. Waits as the router does: progress, and check_peer
// on the peers of unfinished requests.
std::string exchange_data(Transport& t, int me, std::vector<int> with = {0, 1, 2}) {
  std::vector<std::vector<int>> out(kRanks, std::vector<int>(1000, me * 1000)), in(kRanks, std::vector<int>(1000));
  std::vector<Request> reqs;
  reqs.reserve(2 * kRanks);
  std::erase(with, me);
  for (int p : with) {
    for (int& v : out[p]) v += p;
    reqs.push_back({Request::Kind::Send, p, 7, out[p].data(), out[p].size() * sizeof(int)});
    reqs.push_back({Request::Kind::Recv, p, 7, in[p].data(), in[p].size() * sizeof(int)});
  }
  for (auto& r : reqs) t.post(r);
  const auto deadline = net::deadline_in(30);
  for (;;) {
    t.progress();
    bool all = true;
    for (auto& r : reqs) {
      all = all && r.done;
      if (!r.done) t.check_peer(r.peer);
    }
    if (all) break;
    if (net::Clock::now() > deadline) return "rank " + std::to_string(me) + ": exchange did not finish";
  }
  for (int p : with) {
    for (int v : in[p]) {
      if (v != p * 1000 + me) return "rank " + std::to_string(me) + ": wrong data from rank " + std::to_string(p);
    }
  }
  return "";
}

struct Ranks {
  std::vector<std::string> errors = std::vector<std::string>(kRanks);  // what() of each rank, or its data check
  std::vector<std::thread> threads;
  void join() {
    for (auto& t : threads) t.join();
  }
};

std::vector<int> others(int me) {
  std::vector<int> out;
  for (int p = 0; p < kRanks; ++p) {
    if (p != me) out.push_back(p);
  }
  return out;
}

// `secrets` empty: each rank opens the transport as --transport socket does
// under mpirun (open_socket_transport). `partners`: every other rank's
// connection is made at setup; else each on first use.
void start(Ranks& run, Exchange& x, const std::vector<std::string>& secrets, double timeout, bool partners = true) {
  for (int r = 0; r < kRanks; ++r) {
    run.threads.emplace_back([&run, &x, secrets, r, timeout, partners] {
      try {
        ThreadBootstrap b(x, r);
        const std::vector<int> at_setup = partners ? others(r) : std::vector<int>{};
        auto t = secrets.empty()
                     ? open_socket_transport(b, at_setup, kRanks - 1)
                     : make_socket_transport(b, {"127.0.0.1", timeout, secrets[static_cast<size_t>(r)], at_setup, timeout});
        run.errors[static_cast<size_t>(r)] = exchange_data(*t, r);
      } catch (const std::exception& e) {
        run.errors[static_cast<size_t>(r)] = e.what();
      }
    });
  }
}

net::Fd connect_to(int port) {
  int err = 0;
  auto eps = net::resolve("127.0.0.1", port, nullptr);
  return eps.empty() ? net::Fd() : net::connect_once(eps[0], 5000, &err);
}

// True when the listener closes the connection within 10 s.
bool closed_by_listener(int fd) {
  char buf[256];
  const auto deadline = net::deadline_in(10);
  for (;;) {
    int err = 0;
    const auto io = net::recv_all(fd, buf, 1, deadline, &err);
    if (io == net::Io::Closed || io == net::Io::Error) return true;
    if (io == net::Io::Timeout) return false;
  }
}

void send_bytes(int fd, const std::string& bytes) {
  int err = 0;
  net::send_all(fd, bytes.data(), bytes.size(), net::deadline_in(5), &err);
}

std::string le32(uint32_t v) { return std::string(reinterpret_cast<const char*>(&v), 4); }

// Every stranger against one listener; returns which were not dropped.
std::string attack(int port) {
  std::string failures;
  {  // garbage
    net::Fd s = connect_to(port);
    send_bytes(s.get(), std::string(64, '\x5a'));
    if (!closed_by_listener(s.get())) failures += " garbage";
  }
  {  // a hello without a proof, posing as rank 2
    net::Fd s = connect_to(port);
    send_bytes(s.get(), le32(0x4b434f53) + le32(2) + le32(kRanks));
    if (!closed_by_listener(s.get())) failures += " plain-hello";
  }
  {  // an authenticated hello for rank 2's slot, then a wrong proof
    net::Fd s = connect_to(port);
    send_bytes(s.get(), le32(0x41434f53) + le32(2) + le32(kRanks) + std::string(32, 'n'));
    char challenge[64];
    int err = 0;
    if (net::recv_all(s.get(), challenge, sizeof challenge, net::deadline_in(10), &err) != net::Io::Ok) {
      failures += " no-challenge";
    }
    send_bytes(s.get(), std::string(32, 'p'));
    if (!closed_by_listener(s.get())) failures += " wrong-proof";
  }
  return failures;
}

TEST(SocketTransportAuth, StrangersAreDroppedAndTheRunCompletes) {
  Exchange x;
  Ranks run;
  start(run, x, {kSecret, kSecret, kSecret}, 30);
  const auto ports = x.ports();
  // Silent strangers hold on while the others come: they must stall no one,
  // and are dropped once their time for a hello (5 s) is up.
  net::Fd silent0 = connect_to(ports[0]), silent1 = connect_to(ports[1]);
  const std::string failures0 = attack(ports[0]), failures1 = attack(ports[1]);
  EXPECT_TRUE(closed_by_listener(silent1.get()));
  x.release();
  run.join();
  EXPECT_EQ(failures0, "");
  EXPECT_EQ(failures1, "");
  for (int r = 0; r < kRanks; ++r) EXPECT_EQ(run.errors[static_cast<size_t>(r)], "") << "rank " << r;
}

TEST(SocketTransportAuth, WithoutASecretTheHelloIsAsBefore) {
  Exchange x;
  Ranks run;
  start(run, x, {"", "", ""}, 60);
  const auto ports = x.ports();
  net::Fd s = connect_to(ports[0]);
  send_bytes(s.get(), std::string(64, '\x5a'));
  EXPECT_TRUE(closed_by_listener(s.get()));
  x.release();
  run.join();
  for (int r = 0; r < kRanks; ++r) EXPECT_EQ(run.errors[static_cast<size_t>(r)], "") << "rank " << r;
}

TEST(SocketTransportAuth, DifferentSecretsFailInOneLineNamingTheSecret) {
  Exchange x;
  x.release();
  Ranks run;
  start(run, x, {kSecret, kSecret, "another secret, of rank 2"}, 3);
  run.join();
  // Rank 2 doubts a lower rank's proof; the vote gives every rank its line.
  for (int r = 0; r < kRanks; ++r) {
    const std::string& e = run.errors[static_cast<size_t>(r)];
    EXPECT_NE(e.find("socket transport: rank 2 got a wrong proof of SMDDP_STORE_SECRET from rank "), std::string::npos)
        << e;
    EXPECT_EQ(e, run.errors[0]);
    EXPECT_EQ(e.find('\n'), std::string::npos) << e;
  }
}

// No SMDDP_STORE_SECRET: rank 0 draws the job's secret and the bootstrap
// hands it out, so a stranger without it is dropped as above.
TEST(SocketTransportAuth, UnderMpiTheJobDrawsItsOwnSecret) {
  setenv("SMDDP_SOCKET_ADDRESS", "127.0.0.1", 1);
  unsetenv("SMDDP_STORE_SECRET");
  unsetenv("SMDDP_STORE_SECRET_FILE");
  Exchange x;
  Ranks run;
  start(run, x, {}, 30);
  const auto ports = x.ports();
  const std::string failures = attack(ports[1]);
  x.release();
  run.join();
  unsetenv("SMDDP_SOCKET_ADDRESS");
  EXPECT_EQ(failures, "");
  for (int r = 0; r < kRanks; ++r) EXPECT_EQ(run.errors[static_cast<size_t>(r)], "") << "rank " << r;
}

// A connection per other rank needs files: a short soft limit is raised;
// a hard limit below the need fails on every rank, naming the limit, before
// any listener opens.
TEST(SocketTransportAuth, TooFewFilesFailBeforeAnyConnection) {
  rlimit saved{};
  ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &saved), 0);
  setenv("SMDDP_SOCKET_ADDRESS", "127.0.0.1", 1);
  {
    rlimit low{100, saved.rlim_max};
    ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &low), 0);
    Exchange x;
    x.release();
    Ranks run;
    start(run, x, {}, 30);
    run.join();
    for (int r = 0; r < kRanks; ++r) EXPECT_EQ(run.errors[static_cast<size_t>(r)], "") << "rank " << r;
    rlimit now{};
    getrlimit(RLIMIT_NOFILE, &now);
    EXPECT_GE(now.rlim_cur, rlim_t{kRanks - 1 + 256});
  }
  rlimit tight{120, 120};
  if (setrlimit(RLIMIT_NOFILE, &tight) == 0) {  // lowering the hard limit: this process only
    Exchange x;
    x.release();
    Ranks run;
    start(run, x, {}, 30);
    run.join();
    for (int r = 0; r < kRanks; ++r) {
      EXPECT_NE(run.errors[static_cast<size_t>(r)].find("may open 120 files, too few for its 2 connections at setup"),
                std::string::npos)
          << run.errors[static_cast<size_t>(r)];
    }
    setrlimit(RLIMIT_NOFILE, &saved);  // as root; elsewhere the process ends with the test anyway
  }
  unsetenv("SMDDP_SOCKET_ADDRESS");
}

// Without partners nothing connects at setup: each connection is made when
// first used, by the higher rank of the pair, also when both post at once.
// Ranks 0 and 2 talk, rank 1 talks to no one: exactly one connection, and
// none to rank 1's listener; a stranger at rank 0's port meanwhile is
// dropped while rank 0 waits for rank 2.
TEST(SocketTransportAuth, OnDemandConnectsOnlyThePeersThatTalk) {
  Exchange x;
  std::vector<std::string> errors(kRanks);
  std::vector<std::thread> threads;
  std::mutex mu;
  std::condition_variable cv;
  int done = 0;
  bool counted = false, attacked = false;
  x.release();
  for (int r = 0; r < kRanks; ++r) {
    threads.emplace_back([&, r] {
      try {
        ThreadBootstrap b(x, r);
        auto t = make_socket_transport(b, {"127.0.0.1", 30, kSecret, {}, 30});
        if (r == 2) {  // rank 0 waits for it meanwhile
          std::unique_lock lock(mu);
          cv.wait(lock, [&] { return attacked; });
        }
        if (r != 1) errors[static_cast<size_t>(r)] = exchange_data(*t, r, {0, 2});
        // Hold the connections until they are counted.
        std::unique_lock lock(mu);
        ++done;
        cv.notify_all();
        cv.wait(lock, [&] { return counted; });
      } catch (const std::exception& e) {
        errors[static_cast<size_t>(r)] = e.what();
      }
    });
  }
  const auto ports = x.ports();
  const std::string failures = attack(ports[0]);
  {
    std::unique_lock lock(mu);
    attacked = true;
    cv.notify_all();
    cv.wait(lock, [&] { return done == kRanks; });
  }
  // Established loopback connections (state 01) with an end at each listener.
  std::vector<int> at_port(kRanks, 0);
  std::ifstream tcp("/proc/self/net/tcp");
  std::string line;
  std::getline(tcp, line);
  while (std::getline(tcp, line)) {
    unsigned local_port = 0, remote_port = 0, state = 0;
    if (std::sscanf(line.c_str(), " %*d: %*8x:%x %*8x:%x %x", &local_port, &remote_port, &state) != 3) continue;
    for (int r = 0; r < kRanks; ++r) {
      if (state == 1 && static_cast<int>(local_port) == ports[static_cast<size_t>(r)]) ++at_port[static_cast<size_t>(r)];
    }
  }
  {
    std::lock_guard lock(mu);
    counted = true;
    cv.notify_all();
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(failures, "");
  for (int r = 0; r < kRanks; ++r) EXPECT_EQ(errors[static_cast<size_t>(r)], "") << "rank " << r;
  EXPECT_EQ(at_port[0], 1) << "rank 2 connects to rank 0's listener once";
  EXPECT_EQ(at_port[1], 0) << "no one connects to rank 1";
  EXPECT_EQ(at_port[2], 0) << "rank 2, the higher rank, dials; it accepts nothing";
}

TEST(SocketTransportAuth, TheDefaultAddressIsAnInterfaceNotLoopback) {
  const std::string a = first_interface_address();
  if (a.empty()) GTEST_SKIP() << "no up, non-loopback IPv4 interface here";
  in_addr parsed{};
  ASSERT_EQ(inet_pton(AF_INET, a.c_str(), &parsed), 1) << a;
  EXPECT_NE(ntohl(parsed.s_addr) >> 24, 127u) << a;
}

}  // namespace
}  // namespace smddp
