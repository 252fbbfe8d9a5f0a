// The ping-pong probes' endpoint: the engine's own FabricEndpoint (common/,
// same hints, completion queue and address vector as the transport), plus
// one registered send and one receive buffer. Progress is driven by polling
// the completion queue; every wait ends at a deadline.
#pragma once

#include <rdma/fabric.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "fabric/providers.h"
#include "shared/mpi_util.h"
#include "smddp/fabric/endpoint.h"

namespace smddp::diag {

class RdmEndpoint {
 public:
  // `provider` as fi_getinfo takes it ("efa", "tcp", "shm"); `domain` picks
  // one domain ("" = the first, preferring IPv4 addresses). Throws
  // tools::UnavailableError when the provider has no RDM endpoint here, and
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

  fid_mr* register_buffer(std::vector<char>& buf, uint64_t access, uint64_t key);

  ProviderInfo info_;
  std::unique_ptr<FabricEndpoint> ep_;
  fid_mr* send_mr_ = nullptr;
  fid_mr* recv_mr_ = nullptr;
  std::vector<char> send_buf_, recv_buf_;
  std::vector<fi_context2> contexts_;
  size_t posted_ = 0, completed_ = 0;
};

}  // namespace smddp::diag
