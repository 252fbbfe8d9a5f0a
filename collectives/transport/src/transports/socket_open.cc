// Opening the socket transport where the bootstrap has no address of its
// own (socket_transport.h, open_socket_transport).
#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "smddp/common/crypto.h"
#include "smddp/config.h"
#include "smddp/error.h"
#include "transports/socket_transport.h"
#include "bootstrap/tcp_store_auth.h"

namespace smddp {
namespace {

// Rank 0's fresh secret, hex text, the same on every rank afterwards.
std::string job_secret(Bootstrap& bootstrap) {
  constexpr size_t kBytes = 2 * store::kNonceBytes;  // hex of kNonceBytes random bytes
  std::string mine(kBytes, '\0');
  if (bootstrap.rank() == 0) {
    const std::string hex = crypto::random_hex(store::kNonceBytes);
    std::memcpy(mine.data(), hex.data(), std::min(hex.size(), kBytes));
  }
  std::vector<char> all(kBytes * static_cast<size_t>(bootstrap.size()));
  bootstrap.allgather(mine.data(), all.data(), kBytes);
  return std::string(all.data(), kBytes);
}

// Files a rank keeps for everything but its connections (MPI's own, logs,
// the shared-memory segment).
constexpr rlim_t kSpareFiles = 256;

// Room for the connections a rank will hold: raises the soft limit on
// open files toward `wanted` (every rank it could ever connect to) and the
// hard limit. 0 when `needed` (the partners at setup) fits, else the most
// files this process may open.
rlim_t short_of_files(size_t needed, size_t wanted) {
  rlimit lim{};
  if (getrlimit(RLIMIT_NOFILE, &lim) != 0) return 0;  // unknown: let the connections tell
  const rlim_t want = static_cast<rlim_t>(std::max(needed, wanted)) + kSpareFiles;
  if (lim.rlim_cur != RLIM_INFINITY && lim.rlim_cur < want) {
    rlimit raised = lim;
    raised.rlim_cur = lim.rlim_max == RLIM_INFINITY ? want : std::min(want, lim.rlim_max);
    if (setrlimit(RLIMIT_NOFILE, &raised) == 0) lim = raised;
  }
  const rlim_t need = static_cast<rlim_t>(needed) + kSpareFiles;
  return lim.rlim_cur == RLIM_INFINITY || lim.rlim_cur >= need ? 0 : lim.rlim_cur;
}

// What each rank tells the others before any listener opens.
struct Readiness {
  int32_t files = 0;        // short_of_files(): the limit that is too low, or 0
  int32_t address = 0;      // 1: it has an address to listen on
  int32_t connections = 0;  // its partners
  char host[64] = {};
};

// Container and VM bridges reach no other host (NCCL skips them too).
bool local_bridge(std::string_view name) { return name.starts_with("docker") || name.starts_with("virbr"); }

}  // namespace

std::string first_interface_address() {
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return "";
  std::string found;
  for (ifaddrs* i = list; i && found.empty(); i = i->ifa_next) {
    if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET) continue;
    const unsigned flags = i->ifa_flags;
    if (!(flags & IFF_UP) || !(flags & IFF_RUNNING) || (flags & IFF_LOOPBACK) || local_bridge(i->ifa_name)) continue;
    char text[INET_ADDRSTRLEN] = {};
    const auto* in = reinterpret_cast<const sockaddr_in*>(i->ifa_addr);
    if (inet_ntop(AF_INET, &in->sin_addr, text, sizeof text)) found = text;
  }
  freeifaddrs(list);
  return found;
}

SocketOpening try_open_socket_transport(Bootstrap& bootstrap, const std::vector<int>& partners, int remote_ranks,
                                        double setup_timeout_seconds) {
  std::string address = config::text("SMDDP_SOCKET_ADDRESS");
  if (address.empty()) address = first_interface_address();
  // Every rank learns whether every rank can take part, so none waits for
  // a listener that never comes.
  Readiness mine;
  mine.address = address.empty() ? 0 : 1;
  mine.connections = static_cast<int32_t>(partners.size());
  mine.files = static_cast<int32_t>(
      std::min<rlim_t>(short_of_files(partners.size(), static_cast<size_t>(std::max(remote_ranks, 0))), INT32_MAX));
  gethostname(mine.host, sizeof mine.host - 1);
  std::vector<Readiness> all(static_cast<size_t>(bootstrap.size()));
  bootstrap.allgather(&mine, all.data(), sizeof(Readiness));
  for (size_t r = 0; r < all.size(); ++r) {
    const std::string who = "socket transport: rank " + std::to_string(r) + " on " + all[r].host;
    if (!all[r].address) {
      return {nullptr, who + " found no up, non-loopback IPv4 address to listen on (set SMDDP_SOCKET_ADDRESS "
                           "to an address of its host)"};
    }
    if (all[r].files) {
      return {nullptr, who + " may open " + std::to_string(all[r].files) + " files, too few for its " +
                           std::to_string(all[r].connections) + " connections at setup (raise `ulimit -n`, or use " +
                           "--transport mpi)"};
    }
  }
  // Drawn on every call, so every rank takes part in the allgather even
  // where only some have SMDDP_STORE_SECRET (their handshakes then fail,
  // naming it).
  std::string secret = job_secret(bootstrap);
  if (std::string configured = store::configured_secret(); !configured.empty()) secret = configured;
  return try_make_socket_transport(
      bootstrap, {address, config::seconds("SMDDP_BOOTSTRAP_TIMEOUT"), secret, partners, setup_timeout_seconds});
}

std::unique_ptr<Transport> open_socket_transport(Bootstrap& bootstrap, const std::vector<int>& partners,
                                                 int remote_ranks) {
  SocketOpening opening =
      try_open_socket_transport(bootstrap, partners, remote_ranks, config::seconds("SMDDP_BOOTSTRAP_TIMEOUT"));
  if (!opening.transport) throw TransportError(opening.failure);
  return std::move(opening.transport);
}

std::unique_ptr<Transport> Bootstrap::make_socket_network_transport(const Topology& topo) {
  return open_socket_transport(*this, socket_partners(topo), topo.remote_size());
}

}  // namespace smddp
