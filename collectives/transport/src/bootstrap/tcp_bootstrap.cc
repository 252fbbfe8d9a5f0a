// The torchrun-style bootstrap over the TCP store (tcp_bootstrap.h). Each
// collective bootstrap call is one numbered step: allgather step S has rank
// R set "ag/S/R" and then get every "ag/S/*"; barrier is an empty allgather.
// Every rank makes the same calls in the same order, so the numbers agree.
#include "bootstrap/tcp_bootstrap.h"

#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "smddp/config.h"
#include "smddp/error.h"
#include "transports/socket_transport.h"
#include "bootstrap/tcp_store.h"
#include "bootstrap/tcp_store_auth.h"

namespace smddp {
namespace {

const char* env(const char* name) {
  const char* v = std::getenv(name);
  return v && *v ? v : nullptr;
}

// A whole decimal integer in [lo, hi], or UsageError naming the variable.
int env_int(const char* name, long lo, long hi, const std::string& expected) {
  const char* v = env(name);
  if (!v) throw UsageError(std::string(name) + " is not set (" + expected + ")");
  char* end = nullptr;
  errno = 0;
  long x = std::strtol(v, &end, 10);
  if (errno || *end || end == v || x < lo || x > hi) {
    throw UsageError(std::string(name) + "='" + v + "': expected " + expected);
  }
  return static_cast<int>(x);
}

std::string host_name() {
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  return host;
}

// Ranks with equal identities can share memory: same host name, same boot.
std::string machine_identity() {
  std::string boot_id;
  std::ifstream f("/proc/sys/kernel/random/boot_id");
  std::getline(f, boot_id);
  return host_name() + "/" + boot_id;
}

class TcpBootstrap final : public Bootstrap {
 public:
  explicit TcpBootstrap(const TorchrunEnvironment& env)
      : env_(env),
        store_(TcpStoreConfig{env.master_addr, env.master_port, env.rank, env.world_size, host_name(),
                              env.timeout_seconds, env.store_secret, env.store_bind_addr,
                              env.store_client_timeout_seconds}) {}

  int rank() const override { return env_.rank; }
  int size() const override { return env_.world_size; }

  void allgather(const void* in, void* out, size_t bytes) override {
    const std::string prefix = "ag/" + std::to_string(step_++) + "/";
    store_.set(prefix + std::to_string(env_.rank),
               bytes ? std::string(static_cast<const char*>(in), bytes) : std::string());
    std::vector<std::string> keys;
    for (int r = 0; r < env_.world_size; ++r) keys.push_back(prefix + std::to_string(r));
    std::vector<std::string> values = store_.get(keys);
    for (int r = 0; r < env_.world_size; ++r) {
      const std::string& v = values[static_cast<size_t>(r)];
      if (v.size() != bytes) {
        throw TransportError("TCP store bootstrap: rank " + std::to_string(r) + " gave " + std::to_string(v.size()) +
                             " bytes to step " + prefix + ", rank " + std::to_string(env_.rank) + " " +
                             std::to_string(bytes) + " (different builds of smddp in one job?)");
      }
      if (bytes) std::memcpy(static_cast<char*>(out) + static_cast<size_t>(r) * bytes, v.data(), bytes);
    }
  }

  void barrier() override { allgather(nullptr, nullptr, 0); }

  // The lowest rank with this machine's identity names the group, as the
  // MPI bootstrap does: equal exactly on ranks that share memory.
  int shared_memory_key() override {
    char mine[256] = {};
    std::snprintf(mine, sizeof mine, "%s", machine_identity().c_str());
    std::vector<char> all(sizeof mine * static_cast<size_t>(env_.world_size));
    allgather(mine, all.data(), sizeof mine);
    for (int r = 0; r < env_.world_size; ++r) {
      if (std::strncmp(&all[sizeof mine * static_cast<size_t>(r)], mine, sizeof mine) == 0) return r;
    }
    return env_.rank;
  }

  // Without a topology: every connection on demand.
  std::unique_ptr<Transport> make_network_transport() override { return socket_transport({}); }
  // The network transport here is the socket transport already; auto and
  // --transport socket alike connect the partners at setup.
  bool network_transport_is_socket() const override { return true; }
  std::unique_ptr<Transport> make_socket_network_transport(const Topology& topo) override {
    return socket_transport(socket_partners(topo));
  }

 private:
  std::unique_ptr<Transport> socket_transport(std::vector<int> partners) {
    const std::string forced = config::text("SMDDP_SOCKET_ADDRESS");
    return make_socket_transport(*this, {forced.empty() ? store_.local_address() : forced, env_.timeout_seconds,
                                         env_.store_secret, std::move(partners), env_.timeout_seconds});
  }

  TorchrunEnvironment env_;
  TcpStore store_;
  uint64_t step_ = 0;
};

}  // namespace

TorchrunEnvironment read_torchrun_environment() {
  TorchrunEnvironment e;
  e.world_size = env_int("WORLD_SIZE", 1, 1 << 24, "the number of ranks, a positive integer");
  e.rank = env_int("RANK", 0, 1 << 24, "this process's rank, 0..WORLD_SIZE-1");
  if (e.rank >= e.world_size) {
    throw UsageError("RANK=" + std::to_string(e.rank) + " is not below WORLD_SIZE=" + std::to_string(e.world_size) +
                     " (ranks are 0.." + std::to_string(e.world_size - 1) + ")");
  }
  const char* addr = env("MASTER_ADDR");
  if (!addr) throw UsageError("MASTER_ADDR is not set (the address or name of rank 0's host)");
  e.master_addr = addr;
  e.master_port = env_int("MASTER_PORT", 1, 65535, "a TCP port, 1..65535");
  // torchrun's agent already serves its own store on MASTER_PORT: ours takes
  // the next port, the same on every rank (SMDDP_STORE_PORT overrides both).
  if (config::is_set("SMDDP_STORE_PORT")) {
    e.master_port = static_cast<int>(config::integer("SMDDP_STORE_PORT"));
  } else if (const char* agent = env("TORCHELASTIC_USE_AGENT_STORE"); agent && std::string(agent) == "True") {
    e.master_port = e.master_port % 65535 + 1;
  }
  if (env("LOCAL_WORLD_SIZE")) {
    e.local_world_size = env_int("LOCAL_WORLD_SIZE", 1, e.world_size, "the ranks on this host, 1..WORLD_SIZE");
  }
  if (env("LOCAL_RANK")) {
    const int hi = e.local_world_size > 0 ? e.local_world_size - 1 : e.world_size - 1;
    e.local_rank = env_int("LOCAL_RANK", 0, hi, "this process's rank on its host, 0..LOCAL_WORLD_SIZE-1");
  }
  e.timeout_seconds = config::seconds("SMDDP_BOOTSTRAP_TIMEOUT");
  e.store_secret = store::configured_secret();
  e.store_bind_addr = config::text("SMDDP_STORE_BIND_ADDR");
  e.store_client_timeout_seconds = config::seconds("SMDDP_STORE_HANDSHAKE_TIMEOUT");
  return e;
}

std::unique_ptr<Bootstrap> make_tcp_bootstrap(const TorchrunEnvironment& env) {
  return std::make_unique<TcpBootstrap>(env);
}

}  // namespace smddp
