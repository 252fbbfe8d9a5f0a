// The torchrun-style bootstrap: ranks started by any launcher (torchrun,
// Kubernetes, a shell loop) with RANK, WORLD_SIZE, MASTER_ADDR and
// MASTER_PORT meet in a TCP store (tcp_store.h) instead of MPI. LOCAL_RANK
// and LOCAL_WORLD_SIZE are checked when present; which ranks share memory
// is found from host name and boot id, as MPI would. The network transport
// it offers is the socket transport (socket_transport.h).
#pragma once

#include <memory>
#include <string>

#include "bootstrap/bootstrap.h"

namespace smddp {

struct TorchrunEnvironment {
  int rank = 0;
  int world_size = 1;
  int local_rank = -1;        // -1: LOCAL_RANK not set
  int local_world_size = -1;  // -1: LOCAL_WORLD_SIZE not set
  std::string master_addr;
  int master_port = 0;          // the store's port: MASTER_PORT, see read_torchrun_environment()
  double timeout_seconds = 60;  // SMDDP_BOOTSTRAP_TIMEOUT
  std::string store_secret;     // SMDDP_STORE_SECRET or SMDDP_STORE_SECRET_FILE's contents
  std::string store_bind_addr;  // SMDDP_STORE_BIND_ADDR
  double store_client_timeout_seconds = 10;  // SMDDP_STORE_HANDSHAKE_TIMEOUT
};

// Reads the variables above; UsageError naming the variable when one is
// missing or malformed (RANK outside 0..WORLD_SIZE-1, a port outside
// 1..65535, ...). Under torchrun, whose agent serves its own store on
// MASTER_PORT (TORCHELASTIC_USE_AGENT_STORE=True), the store uses
// MASTER_PORT+1; SMDDP_STORE_PORT sets the port outright.
TorchrunEnvironment read_torchrun_environment();

// Connects to the store and waits for every rank (see TcpStore).
std::unique_ptr<Bootstrap> make_tcp_bootstrap(const TorchrunEnvironment& env);

}  // namespace smddp
