// One reliable-datagram (FI_EP_RDM) libfabric endpoint with tagged messages,
// for the ping-pong probes: fabric, domain, completion queue, address vector,
// and one registered send and one receive buffer. Progress is driven by
// polling the completion queue; every wait ends at a deadline.
#pragma once

#include <rdma/fabric.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>

#include <cstdint>
#include <string>
#include <vector>

#include "common/mpi_util.h"
#include "fabric/providers.h"

namespace smddp::diag {

class RdmEndpoint {
 public:
  // `provider` as fi_getinfo takes it ("efa", "tcp", "shm"); `domain` picks
  // one domain ("" = the first, preferring IPv4 addresses). Throws
  // UnavailableError when the provider has no RDM endpoint here, and
  // TransportError when opening a resource fails.
  RdmEndpoint(const std::string& provider, const std::string& domain, size_t buffer_bytes);
  ~RdmEndpoint();
  RdmEndpoint(const RdmEndpoint&) = delete;
  RdmEndpoint& operator=(const RdmEndpoint&) = delete;

  const ProviderInfo& info() const { return info_; }
  // This endpoint's address (opaque bytes) for the others to insert.
  std::string address() const;
  // Peer i becomes addressable as i.
  void insert_peers(const std::vector<std::string>& addresses);

  void post_send(int peer, size_t bytes, uint64_t tag, Deadline deadline);
  void post_recv(int peer, size_t bytes, uint64_t tag, Deadline deadline);
  // Waits until every posted operation completed. `what` names the wait in a
  // TimeoutError ("bandwidth from rank 2 (host)").
  void wait_all(Deadline deadline, const std::string& what);

 private:
  void progress();  // reads completions
  void* next_context();

  ProviderInfo info_;
  fi_info* fi_ = nullptr;
  fid_fabric* fabric_ = nullptr;
  fid_domain* domain_ = nullptr;
  fid_cq* cq_ = nullptr;
  fid_av* av_ = nullptr;
  fid_ep* ep_ = nullptr;
  fid_mr* send_mr_ = nullptr;
  fid_mr* recv_mr_ = nullptr;
  std::vector<char> send_buf_, recv_buf_;
  std::vector<fi_addr_t> peers_;
  std::vector<fi_context2> contexts_;
  size_t posted_ = 0, completed_ = 0;
};

}  // namespace smddp::diag
