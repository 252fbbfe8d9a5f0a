// Opening the socket transport where the bootstrap has no address of its
// own (socket_transport.h, open_socket_transport).
#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "smddp/config.h"
#include "smddp/error.h"
#include "transport/sha256.h"
#include "transport/socket_transport.h"
#include "transport/tcp_store_auth.h"

namespace smddp {
namespace {

// Rank 0's fresh secret, hex text, the same on every rank afterwards.
std::string job_secret(Bootstrap& bootstrap) {
  constexpr size_t kBytes = 2 * store::kNonceBytes;  // hex of kNonceBytes random bytes
  std::string mine(kBytes, '\0');
  if (bootstrap.rank() == 0) {
    const std::string hex = crypto::hex(store::random_nonce());
    std::memcpy(mine.data(), hex.data(), std::min(hex.size(), kBytes));
  }
  std::vector<char> all(kBytes * static_cast<size_t>(bootstrap.size()));
  bootstrap.allgather(mine.data(), all.data(), kBytes);
  return std::string(all.data(), kBytes);
}

std::string configured_secret() {
  return config::is_set("SMDDP_STORE_SECRET") ? config::secret("SMDDP_STORE_SECRET")
                                              : config::secret("SMDDP_STORE_SECRET_FILE");
}

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

std::unique_ptr<Transport> open_socket_transport(Bootstrap& bootstrap) {
  std::string address = config::text("SMDDP_SOCKET_ADDRESS");
  if (address.empty()) address = first_interface_address();
  // Every rank learns whether every rank has an address, so none waits for
  // a listener that never comes.
  const char ok = address.empty() ? 0 : 1;
  std::vector<char> oks(static_cast<size_t>(bootstrap.size()));
  bootstrap.allgather(&ok, oks.data(), 1);
  for (size_t r = 0; r < oks.size(); ++r) {
    if (!oks[r]) {
      throw TransportError("socket transport: rank " + std::to_string(r) +
                           " found no up, non-loopback IPv4 address to listen on (set SMDDP_SOCKET_ADDRESS "
                           "to an address of its host)");
    }
  }
  // Drawn on every call, so every rank takes part in the allgather even
  // where only some have SMDDP_STORE_SECRET (their handshakes then fail,
  // naming it).
  std::string secret = job_secret(bootstrap);
  if (std::string configured = configured_secret(); !configured.empty()) secret = configured;
  return make_socket_transport(bootstrap, {address, config::seconds("SMDDP_BOOTSTRAP_TIMEOUT"), secret});
}

std::unique_ptr<Transport> Bootstrap::make_socket_network_transport() { return open_socket_transport(*this); }

}  // namespace smddp
