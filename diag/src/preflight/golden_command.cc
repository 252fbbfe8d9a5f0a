// smddp-diag golden learn -o FILE: under mpirun on a healthy cluster (or
// alone, for this node), the versions and settings every node agrees on,
// as a golden file that preflight --golden checks later runs against
// (golden.h; docs/diag.md, "Golden files").
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <iostream>

#include "commands.h"
#include "preflight/cluster.h"
#include "preflight/consistency_check.h"
#include "preflight/golden.h"
#include "shared/files.h"
#include "shared/mpi_util.h"
#include "smddp/config.h"
#include "smddp/error.h"
#include "smddp/tools/atomic_file.h"
#include "smddp/tools/exit_codes.h"
#include "smddp/tools/paths.h"
#include "system/nvml.h"

namespace smddp::diag {
namespace {

class GoldenCommand final : public Command {
 public:
  GoldenCommand(CLI::App& parent, const GlobalOptions& global) : global_(global) {
    app_ = parent.add_subcommand("golden", "Golden files of versions and settings for preflight --golden");
    learn_ = app_->add_subcommand("learn", "Under mpirun on a healthy cluster: write what every node agrees on");
    app_->require_subcommand(1);
    learn_->add_option("-o,--output", output_, "Golden file to write (JSON)")->required();
    learn_->add_option("--ignore", ignore_, "Fact names (globs) to leave out, setting names to allow with any value (comma list)")->delimiter(',');
    learn_->add_option("--nccl-library", sources_.nccl_library, "NCCL library whose version is recorded")->capture_default_str();
  }

  CLI::App* app() const override { return app_; }

  void validate() override {
    tools::check_writable(output_, "-o/--output");
    if (sources_.nccl_library.empty()) throw UsageError("--nccl-library must not be empty");
    sources_.root = SystemRoot::from_option(global_.sysfs_root);
    sources_.nvml_library = nvml_library(global_.nvml_library);
    sources_.nccl_version_fault = Faults::from_env().nccl_version;
  }

  int run() override {
    if (!launched_by_mpi()) {
      const std::vector<std::optional<std::string>> payloads = {consistency_payload(true, sources_)};
      return write(gather_nodes(payloads, {}, {}));
    }
    MpiSession mpi;
    MPI_Comm comm = MPI_COMM_NULL, local = MPI_COMM_NULL;
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
    // A node's first rank (by shared memory) reports the node's versions.
    MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, mpi.rank(), MPI_INFO_NULL, &local);
    int local_rank = 0;
    MPI_Comm_rank(local, &local_rank);
    MPI_Comm_free(&local);
    const double timeout_s = config::seconds("SMDDP_TIMEOUT");
    auto payloads = gather_until(comm, 0, consistency_payload(local_rank == 0, sources_), kTagFacts, deadline_in(timeout_s));
    int code = tools::kExitOk;
    std::vector<std::string> codes(static_cast<size_t>(mpi.size()));
    if (mpi.rank() == 0) {
      std::vector<std::string> missing;
      for (size_t r = 0; r < payloads.size(); ++r) {
        if (!payloads[r]) missing.push_back(std::to_string(r));
      }
      if (!missing.empty()) {
        std::cerr << fmt::format("smddp-diag golden: rank(s) {} sent nothing within {} s (SMDDP_TIMEOUT); nothing written\n",
                                 fmt::join(missing, ", "), timeout_s);
        MPI_Comm_free(&comm);
        mpi.abort(tools::kExitLost);
      }
      // Whatever happens here, the other ranks hear the code and end now.
      try {
        code = write(gather_nodes(payloads, {}, {}));
      } catch (const std::exception& e) {
        std::cerr << "smddp-diag golden: " << tools::error_text(e) << "\n";
        code = tools::exit_code_for(e);
      }
      for (auto& c : codes) c = std::to_string(code);
    }
    auto got = scatter_until(comm, 0, codes, kTagFinal, deadline_in(timeout_s));
    MPI_Comm_free(&comm);
    if (mpi.rank() != 0) code = got ? std::stoi(*got) : tools::kExitLost;
    return code;
  }

 private:
  int write(const GatheredNodes& g) {
    std::string text;
    try {
      text = learn_golden(g.nodes, ignore_);
    } catch (const Error& e) {
      std::cerr << "smddp-diag golden: " << e.what() << "; nothing written\n";
      return tools::kExitFailed;
    }
    tools::write_atomically(output_, text);
    std::cout << fmt::format("smddp-diag golden: {} node(s) agree -> {}\n", g.nodes.size(), output_);
    return tools::kExitOk;
  }

  const GlobalOptions& global_;
  CLI::App* app_ = nullptr;
  CLI::App* learn_ = nullptr;
  std::string output_;
  std::vector<std::string> ignore_;
  FactSources sources_;
};

}  // namespace

std::unique_ptr<Command> make_golden_command(CLI::App& parent, const GlobalOptions& global) {
  return std::make_unique<GoldenCommand>(parent, global);
}

}  // namespace smddp::diag
