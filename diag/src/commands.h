// The smddp-diag subcommands. Each adds its CLI11 subcommand and
// options, checks every input in validate() (UsageError -> exit 64 before any
// work) and does its work in run(), which returns the exit code.
#pragma once

#include <memory>
#include <string>

namespace CLI {
class App;
}

namespace smddp::diag {

// Options every subcommand shares (given before or after the subcommand name).
struct GlobalOptions {
  std::string sysfs_root;    // --sysfs-root, else SMDDP_SYSFS_ROOT
  std::string nvml_library;  // --nvml-library, else SMDDP_NVML_LIBRARY
};

class Command {
 public:
  virtual ~Command() = default;
  virtual CLI::App* app() const = 0;
  virtual void validate() = 0;
  virtual int run() = 0;
};

std::unique_ptr<Command> make_topo_command(CLI::App& parent, const GlobalOptions& global);
std::unique_ptr<Command> make_fabric_command(CLI::App& parent, const GlobalOptions& global);
std::unique_ptr<Command> make_preflight_command(CLI::App& parent, const GlobalOptions& global);
std::unique_ptr<Command> make_exporter_command(CLI::App& parent, const GlobalOptions& global);
std::unique_ptr<Command> make_isolate_command(CLI::App& parent, const GlobalOptions& global);
std::unique_ptr<Command> make_baseline_command(CLI::App& parent, const GlobalOptions& global);
std::unique_ptr<Command> make_ras_command(CLI::App& parent, const GlobalOptions& global);
std::unique_ptr<Command> make_golden_command(CLI::App& parent, const GlobalOptions& global);

}  // namespace smddp::diag
