#include "supervision/hang_report_channel.h"

#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <poll.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>

#include "smddp/common/auth_frame.h"
#include "smddp/common/crypto.h"
#include "smddp/common/socket_io.h"
#include "smddp/common/strings.h"
#include "smddp/config.h"
#include "smddp/error.h"

namespace smddp::bench {

namespace hang_wire {
namespace {

crypto::AuthFrame frame(const std::string& nonce, std::string_view host, std::string_view records) {
  crypto::AuthFrame f("smddp-hang-report");
  f.field(nonce).field(host).field(records);
  return f;
}

void put_be32(std::string& out, uint32_t v) {
  for (int shift = 24; shift >= 0; shift -= 8) out.push_back(static_cast<char>((v >> shift) & 0xff));
}

uint32_t be32(std::string_view p) {
  uint32_t v = 0;
  for (size_t i = 0; i < 4; ++i) v = (v << 8) | static_cast<unsigned char>(p[i]);
  return v;
}

}  // namespace

size_t body_bytes(std::string_view head) {
  if (head.size() < kHeadBytes) return 0;
  const uint32_t host = be32(head), records = be32(head.substr(4));
  if (host == 0 || host > kMaxHost || records > kMaxRecords) return 0;
  return size_t{host} + records + crypto::kMacBytes;
}

std::string seal(const std::string& secret, const std::string& nonce, const std::string& host,
                 const std::string& records) {
  if (host.empty() || host.size() > kMaxHost || records.size() > kMaxRecords) return "";
  std::string message;
  put_be32(message, static_cast<uint32_t>(host.size()));
  put_be32(message, static_cast<uint32_t>(records.size()));
  return message + host + records + frame(nonce, host, records).mac(secret);
}

bool open(const std::string& secret, const std::string& nonce, std::string_view message, std::string& host,
          std::string& records) {
  const size_t body = body_bytes(message);
  if (body == 0 || message.size() != kHeadBytes + body) return false;
  const std::string_view h = message.substr(kHeadBytes, be32(message));
  const std::string_view r = message.substr(kHeadBytes + h.size(), be32(message.substr(4)));
  if (!frame(nonce, h, r).verify(secret, message.substr(kHeadBytes + h.size() + r.size()))) return false;
  host = h;
  records = r;
  return true;
}

}  // namespace hang_wire

namespace {

constexpr size_t kSecretBytes = 32, kNonceBytes = 32;
constexpr size_t kEndpointsBytes = 2048;         // rank 0's endpoints, "ADDR|PORT\n" each
constexpr int kProbeMs = 1000;                   // per endpoint, at attach

// `n` random bytes, or false: the channel is best effort, and a rank must
// not throw alone from the collective open() or from a report.
bool random_bytes(std::string& out, size_t n) {
  try {
    out = crypto::random_bytes(n);
    return true;
  } catch (const Error&) {
    return false;
  }
}

// Rank 0's numeric addresses that another host may reach: up, not
// loopback, not IPv6 link-local (which would need a scope).
std::vector<std::string> own_addresses() {
  std::vector<std::string> out;
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return out;
  for (ifaddrs* a = list; a; a = a->ifa_next) {
    if (!a->ifa_addr || !(a->ifa_flags & IFF_UP) || (a->ifa_flags & IFF_LOOPBACK)) continue;
    const int family = a->ifa_addr->sa_family;
    if (family != AF_INET && family != AF_INET6) continue;
    if (family == AF_INET6 && IN6_IS_ADDR_LINKLOCAL(&reinterpret_cast<sockaddr_in6*>(a->ifa_addr)->sin6_addr)) continue;
    char host[NI_MAXHOST] = "";
    const socklen_t len = family == AF_INET ? sizeof(sockaddr_in) : sizeof(sockaddr_in6);
    if (getnameinfo(a->ifa_addr, len, host, sizeof host, nullptr, 0, NI_NUMERICHOST) == 0) out.push_back(host);
  }
  freeifaddrs(list);
  return out;
}

bool wildcard(const std::string& addr) { return addr == "0.0.0.0" || addr == "::"; }

// Rank 0: listeners, and the endpoints they stand for ("ADDR|PORT" each).
std::vector<std::string> listen_everywhere(std::vector<int>& fds, std::vector<size_t>& fd_of) {
  std::vector<std::string> endpoints;
  const std::string bind = config::is_set("SMDDP_STORE_BIND_ADDR") ? config::text("SMDDP_STORE_BIND_ADDR") : "";
  const std::vector<std::string> addrs = bind.empty() ? own_addresses() : std::vector<std::string>{bind};
  for (const auto& addr : addrs) {
    std::string error;
    auto eps = net::resolve(addr, 0, &error);
    if (eps.empty()) continue;
    int err = 0;
    net::Fd fd = net::listen_on(eps.front(), &err);
    if (!fd) continue;
    const int port = net::local_port(fd.get());
    const size_t index = fds.size();
    fds.push_back(fd.release());
    // A wildcard listener is reached on any of the host's addresses.
    for (const auto& a : wildcard(addr) ? own_addresses() : std::vector<std::string>{addr}) {
      endpoints.push_back(a + "|" + std::to_string(port));
      fd_of.push_back(index);
    }
  }
  return endpoints;
}

bool split_endpoint(const std::string& e, std::string& addr, int& port) {
  const auto bar = e.find('|');
  if (bar == std::string::npos) return false;
  addr = e.substr(0, bar);
  port = std::atoi(e.c_str() + bar + 1);
  return port > 0;
}

net::Fd connect_to(const std::string& endpoint, int timeout_ms) {
  std::string addr, error;
  int port = 0, err = 0;
  if (!split_endpoint(endpoint, addr, port)) return net::Fd();
  auto eps = net::resolve(addr, port, &error);
  return eps.empty() ? net::Fd() : net::connect_once(eps.front(), timeout_ms, &err);
}

// One report from an accepted connection, or "" (not authentic, too slow).
std::string read_report(int fd, const std::string& secret, net::Clock::time_point deadline, std::string& host) {
  std::string nonce;
  int err = 0;
  if (!random_bytes(nonce, kNonceBytes) || net::send_all(fd, nonce.data(), nonce.size(), deadline, &err) != net::Io::Ok) {
    return "";
  }
  std::string message(hang_wire::kHeadBytes, '\0');
  if (net::recv_all(fd, message.data(), message.size(), deadline, &err) != net::Io::Ok) return "";
  const size_t body = hang_wire::body_bytes(message);
  if (body == 0) return "";
  message.resize(hang_wire::kHeadBytes + body);
  if (net::recv_all(fd, message.data() + hang_wire::kHeadBytes, body, deadline, &err) != net::Io::Ok) return "";
  std::string records;
  return hang_wire::open(secret, nonce, message, host, records) ? records : "";
}

}  // namespace

HangChannel::~HangChannel() {
  for (int fd : listeners_) ::close(fd);
}

void HangChannel::open(Communicator& comm, const std::vector<std::string>& hosts) {
  const int rank = comm.rank(), n = comm.size();
  bool several = false;
  for (const auto& h : hosts) several |= h != hosts.front();
  if (!several) return;
  int first = 0;
  while (hosts[first] != hosts[rank]) ++first;
  const bool remote_first = first == rank && hosts[rank] != hosts[0];

  // Rank 0: listeners, their endpoints and the secret, to everyone.
  std::vector<char> shared(kSecretBytes + kEndpointsBytes, '\0');
  std::vector<int> fds;
  std::vector<size_t> fd_of;
  std::vector<std::string> endpoints;
  if (rank == 0) {
    std::string secret;
    if (random_bytes(secret, kSecretBytes)) {
      endpoints = listen_everywhere(fds, fd_of);
      std::string text;
      for (const auto& e : endpoints) {
        if (text.size() + e.size() + 1 < kEndpointsBytes) text += e + "\n";
      }
      std::memcpy(shared.data(), secret.data(), kSecretBytes);
      std::memcpy(shared.data() + kSecretBytes, text.data(), text.size());
    }
  }
  comm.broadcast(shared.data(), shared.data(), shared.size(), DataType::Uint8, 0);
  secret_.assign(shared.data(), kSecretBytes);
  if (rank != 0) {
    endpoints = common::split(std::string_view(shared.data() + kSecretBytes,
                                               strnlen(shared.data() + kSecretBytes, kEndpointsBytes)),
                              '\n');
  }
  // Each other host's first rank: the first endpoint that answers.
  int32_t chosen = -1;
  if (remote_first) {
    for (size_t i = 0; i < endpoints.size() && chosen < 0; ++i) {
      if (connect_to(endpoints[i], kProbeMs)) chosen = static_cast<int32_t>(i);
    }
    if (chosen >= 0) target_ = endpoints[static_cast<size_t>(chosen)];
  }
  std::vector<int32_t> choices(static_cast<size_t>(n));
  comm.allgather(&chosen, choices.data(), 1, DataType::Int32);
  if (rank != 0) return;
  // Rank 0 keeps the listeners some host reached; the probes it drops.
  std::vector<bool> used(fds.size(), false);
  std::string unreached;
  for (int r = 0; r < n; ++r) {
    int f = 0;
    while (hosts[f] != hosts[r]) ++f;
    if (f != r || hosts[r] == hosts[0]) continue;
    if (choices[r] >= 0 && static_cast<size_t>(choices[r]) < fd_of.size()) {
      used[fd_of[static_cast<size_t>(choices[r])]] = true;
    } else {
      unreached += (unreached.empty() ? "" : ", ") + hosts[r];
    }
  }
  for (size_t i = 0; i < fds.size(); ++i) {
    while (net::accept_nonblocking(fds[i])) {
    }
    if (used[i]) {
      listeners_.push_back(fds[i]);
    } else {
      ::close(fds[i]);
    }
  }
  if (!unreached.empty()) {
    std::fprintf(stderr,
                 "smddp-bench: warning: host(s) %s reach none of rank 0's addresses for the hang report "
                 "(SMDDP_STORE_BIND_ADDR names one); their ranks report on their own host\n",
                 unreached.c_str());
  }
}

bool HangChannel::send(const std::string& host, const std::string& records, double seconds) const {
  if (target_.empty() || host.empty() || host.size() > hang_wire::kMaxHost ||
      records.size() > hang_wire::kMaxRecords) {
    return false;
  }
  const auto deadline = net::deadline_in(seconds);
  net::Fd fd = connect_to(target_, net::ms_left(deadline));
  if (!fd) return false;
  std::string nonce(kNonceBytes, '\0');
  int err = 0;
  if (net::recv_all(fd.get(), nonce.data(), nonce.size(), deadline, &err) != net::Io::Ok) return false;
  const std::string message = hang_wire::seal(secret_, nonce, host, records);
  if (message.empty() || net::send_all(fd.get(), message.data(), message.size(), deadline, &err) != net::Io::Ok) return false;
  // Rank 0 closes after reading: the records are in when the close arrives.
  char byte;
  return net::recv_all(fd.get(), &byte, 1, deadline, &err) == net::Io::Closed;
}

std::map<std::string, std::string> HangChannel::collect(const std::set<std::string>& expected, double seconds) {
  std::lock_guard<std::mutex> lock(mutex_);
  std::map<std::string, std::string> got;
  const auto deadline = net::deadline_in(seconds);
  while (got.size() < expected.size() && net::ms_left(deadline) > 0) {
    std::vector<pollfd> p;
    for (int fd : listeners_) p.push_back({fd, POLLIN, 0});
    if (::poll(p.data(), p.size(), net::ms_left(deadline, 100)) <= 0) continue;
    for (const auto& l : p) {
      if (!(l.revents & POLLIN)) continue;
      while (net::Fd c = net::accept_nonblocking(l.fd)) {
        // Each connection gets at most a second of the window.
        const auto by = std::min(deadline, net::deadline_in(1.0));
        std::string host;
        std::string records = read_report(c.get(), secret_, by, host);
        if (!records.empty() && expected.count(host)) got[host] = std::move(records);
      }
    }
  }
  return got;
}

}  // namespace smddp::bench
