// Choosing the bootstrap from how the process was started, so one binary
// runs under mpirun, under srun, and under torchrun-style launchers
// (Kubernetes, a shell loop) without a flag. A launcher's own variables win
// over torchrun's: mpirun may well pass a user's MASTER_ADDR along.
#include <cstdlib>
#include <string>

#include "engine.h"
#include "smddp/communicator.h"
#include "smddp/config.h"
#include "smddp/error.h"
#include "bootstrap/bootstrap.h"
#include "bootstrap/tcp_bootstrap.h"

namespace smddp {
namespace {

bool is_set(const char* name) {
  const char* v = std::getenv(name);
  return v && *v;
}

}  // namespace

BootstrapKind bootstrap_from_environment() {
  for (const char* launcher : {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK"}) {
    if (is_set(launcher)) return BootstrapKind::Mpi;
  }
  std::string missing;
  bool any = false;
  for (const char* name : {"RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"}) {
    if (!is_set(name)) {
      missing += missing.empty() ? name : std::string(", ") + name;
    } else if (std::string(name) != "RANK") {
      any = true;  // RANK alone is too common a name to mean torchrun
    }
  }
  if (missing.empty()) return BootstrapKind::TcpStore;
  if (!any) return BootstrapKind::Mpi;
  throw UsageError("torchrun-style start without mpirun needs RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT; " +
                   missing + (missing.find(',') == std::string::npos ? " is" : " are") + " not set");
}

std::unique_ptr<Communicator> Communicator::create_from_env(const CommunicatorOptions& options) {
  config::check(config::kEngine);  // before the TCP store: a bad setting is no one's peer failure
  return make_engine_communicator(make_tcp_bootstrap(read_torchrun_environment()), options);
}

std::unique_ptr<Communicator> Communicator::create(const CommunicatorOptions& options) {
  config::check(config::kEngine);
  if (bootstrap_from_environment() == BootstrapKind::TcpStore) return create_from_env(options);
  return create_from_mpi(options);
}

}  // namespace smddp
