// The liveness port: see fabric_liveness.h for why it exists.
#include "transports/fabric_liveness.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "smddp/error.h"

namespace smddp {
namespace {

constexpr auto kProbeInterval = std::chrono::milliseconds(200);
constexpr auto kProbePatience = std::chrono::seconds(2);  // then retry

in_addr_t first_ipv4() {
  ifaddrs* list = nullptr;
  in_addr_t ip = htonl(INADDR_LOOPBACK);
  if (getifaddrs(&list) != 0) return ip;
  for (ifaddrs* i = list; i; i = i->ifa_next) {
    if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET || (i->ifa_flags & IFF_LOOPBACK) ||
        !(i->ifa_flags & IFF_UP)) {
      continue;
    }
    ip = reinterpret_cast<sockaddr_in*>(i->ifa_addr)->sin_addr.s_addr;
    break;
  }
  freeifaddrs(list);
  return ip;
}

}  // namespace

in_addr_t ipv4_of_fabric_address(const std::vector<char>& address) {
  sockaddr_in sin{};
  if (address.size() < sizeof(sin)) return INADDR_ANY;
  std::memcpy(&sin, address.data(), sizeof(sin));
  return sin.sin_family == AF_INET ? sin.sin_addr.s_addr : INADDR_ANY;
}

LivenessProbe::LivenessProbe(in_addr_t ip) {
  if (ip == INADDR_ANY) ip = first_ipv4();
  listen_fd_ = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  address_.sin_family = AF_INET;
  address_.sin_addr.s_addr = ip;
  address_.sin_port = 0;
  socklen_t len = sizeof(address_);
  if (listen_fd_ < 0 || bind(listen_fd_, reinterpret_cast<sockaddr*>(&address_), len) != 0 ||
      listen(listen_fd_, 128) != 0 ||
      getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&address_), &len) != 0) {
    int err = errno;
    if (listen_fd_ >= 0) close(listen_fd_);
    char text[INET_ADDRSTRLEN] = {};
    inet_ntop(AF_INET, &ip, text, sizeof(text));
    throw TransportError(std::string("cannot open the liveness port on ") + text + ": " + std::strerror(err));
  }
}

LivenessProbe::~LivenessProbe() {
  for (State& s : states_) finish(s);
  if (listen_fd_ >= 0) close(listen_fd_);
}

void LivenessProbe::set_peers(std::vector<sockaddr_in> peers) {
  peers_ = std::move(peers);
  states_.assign(peers_.size(), State{});
}

void LivenessProbe::serve() {
  for (;;) {
    int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) return;
    close(fd);
  }
}

void LivenessProbe::finish(State& s) {
  if (s.fd >= 0) close(s.fd);
  s.fd = -1;
}

std::string LivenessProbe::probe(int peer) {
  State& s = states_[peer];
  const auto now = std::chrono::steady_clock::now();
  int err = 0;
  if (s.fd < 0) {
    if (now - s.started < kProbeInterval) return "";
    s.started = now;
    s.fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (s.fd < 0) return "";
    if (connect(s.fd, reinterpret_cast<const sockaddr*>(&peers_[peer]), sizeof(sockaddr_in)) == 0) {
      finish(s);
      return "";
    }
    if (errno != EINPROGRESS) err = errno;
  }
  if (err == 0) {
    pollfd p{s.fd, POLLOUT, 0};
    if (poll(&p, 1, 0) <= 0) {
      if (now - s.started > kProbePatience) finish(s);  // no answer: unknown, try again later
      return "";
    }
    socklen_t len = sizeof(err);
    getsockopt(s.fd, SOL_SOCKET, SO_ERROR, &err, &len);
  }
  finish(s);
  if (err != ECONNREFUSED) return "";
  char text[INET_ADDRSTRLEN] = {};
  inet_ntop(AF_INET, &peers_[peer].sin_addr, text, sizeof(text));
  return "its process is gone (" + std::string(text) + ":" + std::to_string(ntohs(peers_[peer].sin_port)) +
         " refused the liveness probe)";
}

}  // namespace smddp
