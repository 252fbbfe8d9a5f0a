#include "backends/backend.h"

namespace smddp::bench {
namespace {

class SmddpBackend final : public Backend {
 public:
  SmddpBackend(Communicator& comm, const std::string& algorithm) : comm_(comm), options_{algorithm} {}
  std::string_view name() const override { return "smddp"; }
  void run(const CollectiveArgs& args) override { comm_.run(args, options_); }
  std::string algorithm() const override { return comm_.last_algorithm(); }
  uint64_t engine_calls() const override { return comm_.calls(); }
  void barrier() override { comm_.barrier(); }

 private:
  Communicator& comm_;
  CallOptions options_;
};

}  // namespace

std::unique_ptr<Backend> make_smddp_backend(Communicator& comm, const std::string& algorithm) {
  return std::make_unique<SmddpBackend>(comm, algorithm);
}

}  // namespace smddp::bench
