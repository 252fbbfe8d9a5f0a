// Choosing the network transport and bringing the libfabric one up. Every
// rank must reach the same decision, or some would post MPI messages that
// others wait for on libfabric or sockets: each rank opens what it can,
// then one bootstrap allgather of "cards" (ok flag, address, piece size,
// error) lets all ranks decide from the same facts; the socket transport
// votes the same way (socket_transport.h).
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "smddp/config.h"
#include "smddp/error.h"
#include "smddp/fabric/endpoint.h"
#include "smddp/types.h"
#include "transports/fabric_liveness.h"
#include "transports/fabric_transport.h"
#include "transports/socket_transport.h"

namespace smddp {
namespace {

struct Card {
  int32_t ok = 0;
  uint32_t address_len = 0;
  uint64_t max_piece = 0;
  sockaddr_in liveness{};
  char address[256] = {};
  char error[248] = {};
};

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

std::string resolve_transport(const std::string& requested) {
  std::string t = requested, origin = "network_transport";
  if (t.empty() || t == "auto") {
    if (config::is_set("SMDDP_TRANSPORT")) t = config::text("SMDDP_TRANSPORT"), origin = "SMDDP_TRANSPORT";
  }
  if (t.empty()) t = "auto";
  if (!is_network_transport(t)) {
    throw UsageError(origin + "=" + t + ": expected one of " + network_transport_list());
  }
  return t;
}

// FI_PROVIDER may hold a list or an exclusion ("^psm2"): only a plain name
// is a provider we can ask for.
std::string resolve_provider(const std::string& requested) {
  if (!requested.empty()) return requested;
  if (std::string p = config::text("SMDDP_FABRIC_PROVIDER"); !p.empty()) return p;
  if (std::string p = env("FI_PROVIDER"); !p.empty() && p[0] != '^' && p.find(',') == std::string::npos) {
    return p;
  }
  return fabric_provider_available("efa") ? "efa" : "tcp";
}

size_t piece_limit(size_t provider_max) {
  const uint64_t n = config::bytes("SMDDP_FABRIC_MAX_MSG");  // >= 1 when set; 0: unset
  return n ? std::min<size_t>(provider_max, n) : provider_max;
}

void copy_string(char* dst, size_t cap, const std::string& s) {
  std::strncpy(dst, s.c_str(), cap - 1);
  dst[cap - 1] = '\0';
}

// auto without EFA on every rank: the socket transport, which beats MPI's
// point-to-point, when every rank reaches its partners in time; else every
// rank, by the socket transport's vote, takes MPI's together.
std::unique_ptr<Transport> open_without_efa(Bootstrap& bootstrap, const Topology& topo) {
  if (bootstrap.network_transport_is_socket()) return bootstrap.make_socket_network_transport(topo);
  SocketOpening opening = try_open_socket_transport(bootstrap, socket_partners(topo), topo.remote_size(),
                                                    config::seconds("SMDDP_SOCKET_SETUP_TIMEOUT"));
  if (opening.transport) return std::move(opening.transport);
  if (topo.rank == 0) {
    std::fprintf(stderr, "smddp: transport auto: MPI point-to-point between nodes, not sockets: %s\n",
                 opening.failure.c_str());
  }
  return bootstrap.make_network_transport();
}

}  // namespace

std::unique_ptr<Transport> open_network_transport(Bootstrap& bootstrap, const Topology& topo,
                                                  const NetworkChoice& choice) {
  const std::string transport = resolve_transport(choice.transport);
  if (transport == "mpi") return bootstrap.make_network_transport();
  if (transport == "socket") return bootstrap.make_socket_network_transport(topo);
  const bool wanted = transport == "fabric" || fabric_provider_available("efa");
  if (!wanted) return open_without_efa(bootstrap, topo);
  const std::string provider = wanted ? resolve_provider(choice.provider) : "";

  Card mine;
  std::unique_ptr<FabricEndpoint> ep;
  std::unique_ptr<LivenessProbe> liveness;
  if (wanted) {
    try {
      ep = FabricEndpoint::open(provider);
      std::vector<char> address = ep->address();
      if (address.size() > sizeof(mine.address)) throw TransportError("libfabric address too long");
      liveness = std::make_unique<LivenessProbe>(ipv4_of_fabric_address(address));
      mine.liveness = liveness->address();
      std::memcpy(mine.address, address.data(), address.size());
      mine.address_len = static_cast<uint32_t>(address.size());
      mine.max_piece = piece_limit(ep->max_msg_size);
      mine.ok = 1;
    } catch (const TransportError& e) {
      copy_string(mine.error, sizeof(mine.error), e.what());
      ep.reset();
      liveness.reset();
    }
  }
  std::vector<Card> cards(topo.size);
  bootstrap.allgather(&mine, cards.data(), sizeof(Card));

  size_t max_piece = SIZE_MAX;
  for (int r = 0; r < topo.size; ++r) {
    if (cards[r].ok) {
      max_piece = std::min<size_t>(max_piece, cards[r].max_piece);
      continue;
    }
    if (transport == "auto") return open_without_efa(bootstrap, topo);  // efa missing somewhere
    throw TransportError("fabric transport unavailable: rank " + std::to_string(r) + " on " +
                         topo.hosts[r] + " cannot open libfabric provider '" + provider +
                         "': " + cards[r].error);
  }
  std::vector<std::vector<char>> addresses(topo.size);
  std::vector<sockaddr_in> probes(topo.size);
  for (int r = 0; r < topo.size; ++r) {
    addresses[r].assign(cards[r].address, cards[r].address + cards[r].address_len);
    probes[r] = cards[r].liveness;
  }
  liveness->set_peers(std::move(probes));
  ep->insert_peers(addresses);
  if (config::flag("SMDDP_FABRIC_VERBOSE")) {
    std::fprintf(stderr, "smddp: rank %d on %s: fabric transport, provider %s, domain %s, mr_local %d, piece %zu\n",
                 topo.rank, topo.hosts[topo.rank].c_str(), ep->provider.c_str(), ep->domain_name.c_str(),
                 static_cast<int>(ep->mr_local), max_piece);
  }
  return make_fabric_transport(std::move(ep), std::move(liveness), topo, max_piece);
}

}  // namespace smddp
