// One libfabric reliable-datagram (FI_EP_RDM) endpoint with tagged messages:
// the fabric, domain, completion queue, address vector and endpoint, opened
// and closed together, with one set of hints. The engine's transport
// (fabric_transport.cc) and smddp-diag's link probe (diag/src/fabric) both
// open it here, so diag measures the configuration the engine runs on.
//
// Vocabulary: "provider" is libfabric's name for a network back end (efa on
// AWS, "tcp;ofi_rxm" here: tcp sockets with the rxm reliable-datagram layer
// on top). "mr" is a memory registration, required by providers whose
// domain_attr->mr_mode has FI_MR_LOCAL (efa): buffers handed to the NIC carry
// a descriptor from fi_mr_reg.
#pragma once

#include <rdma/fabric.h>
#include <rdma/fi_domain.h>

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

namespace smddp {

struct FabricEndpoint {
  fi_info* info = nullptr;
  fid_fabric* fabric = nullptr;
  fid_domain* domain = nullptr;
  fid_cq* cq = nullptr;
  fid_av* av = nullptr;
  fid_ep* ep = nullptr;

  std::string provider;      // the provider actually opened, e.g. "tcp;ofi_rxm"
  std::string domain_name;   // e.g. "eth0" or "rdmap0s6-rdm"
  bool mr_local = false;     // buffers need fi_mr_reg descriptors
  bool mr_endpoint = false;  // registrations must be bound to the endpoint
  bool mr_prov_key = false;  // the provider picks registration keys
  size_t max_msg_size = 0;   // larger messages are split
  size_t inject_size = 0;    // messages up to this size may use fi_tinject
  int wait_fd = -1;          // readable when the CQ may have completions; -1: none

  FabricEndpoint() = default;
  FabricEndpoint(const FabricEndpoint&) = delete;
  FabricEndpoint& operator=(const FabricEndpoint&) = delete;
  ~FabricEndpoint();

  // Opens an endpoint on `provider` (a libfabric provider name; FI_PROVIDER
  // also filters inside libfabric) and `domain` ("": the first one other
  // hosts can reach). Throws TransportError with libfabric's own message
  // when the provider or domain is missing or refuses.
  static std::unique_ptr<FabricEndpoint> open(const std::string& provider, const std::string& domain = "");

  // This endpoint's address, to be exchanged through the bootstrap.
  std::vector<char> address() const;
  // Inserts every rank's address in rank order; fi_addr_t i is rank i.
  void insert_peers(const std::vector<std::vector<char>>& addresses);
};

// True when libfabric offers an RDM tagged endpoint on `provider`.
bool fabric_provider_available(const std::string& provider);
// The domains `provider` offers with these hints ("eth0", "lo"...); empty
// when it offers none.
std::vector<std::string> fabric_domains(const std::string& provider);

// "rc: libfabric's message".
std::string fabric_strerror(long rc);

}  // namespace smddp
