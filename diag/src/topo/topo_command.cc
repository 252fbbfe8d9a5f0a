// smddp-diag topo: this host's topology (hwloc, NVML, sysfs) or a saved one
// (--hwloc-xml, --nccl-topo), as text or --json.
#include <CLI/CLI.hpp>

#include <iostream>

#include "commands.h"
#include "smddp/tools/exit_codes.h"
#include "smddp/error.h"
#include "system/nvml.h"
#include "topo/sources.h"
#include "topo/topo_report.h"

namespace smddp::diag {
namespace {

class TopoCommand final : public Command {
 public:
  TopoCommand(CLI::App& parent, const GlobalOptions& global) : global_(global) {
    app_ = parent.add_subcommand("topo", "Packages, NUMA, caches, PCI, GPUs, NICs and their affinity matrix");
    app_->add_option("--hwloc-xml", hwloc_xml_, "Analyse a saved hwloc XML topology (lstopo --of xml) instead of this host");
    app_->add_option("--nccl-topo", nccl_xml_, "Analyse an NCCL topology XML (NCCL_TOPO_DUMP_FILE, AWS topology files)");
    app_->add_flag("--json", json_, "Print JSON instead of text");
  }

  CLI::App* app() const override { return app_; }

  void validate() override {
    if (!hwloc_xml_.empty() && !nccl_xml_.empty()) throw UsageError("--hwloc-xml and --nccl-topo exclude each other");
    root_ = SystemRoot::from_option(global_.sysfs_root);
    nvml_library(global_.nvml_library);  // refuses an unreadable file before any work
    // Loading a file is part of checking the input: a malformed one is a usage error.
    if (!hwloc_xml_.empty()) topo_ = load_hwloc_xml(hwloc_xml_);
    if (!nccl_xml_.empty()) topo_ = load_nccl_xml(nccl_xml_);
  }

  int run() override {
    if (hwloc_xml_.empty() && nccl_xml_.empty()) topo_ = discover_host(root_, nvml_library(global_.nvml_library));
    // Warnings also go to stderr, where a script sees them beside --json.
    for (const auto& w : topo_.warnings) std::cerr << "smddp-diag topo: warning: " << w << "\n";
    if (json_) {
      std::cout << topology_json(topo_).dump(2) << "\n";
    } else {
      std::cout << topology_text(topo_);
    }
    return tools::kExitOk;
  }

 private:
  const GlobalOptions& global_;
  CLI::App* app_ = nullptr;
  std::string hwloc_xml_, nccl_xml_;
  bool json_ = false;
  SystemRoot root_;
  Topology topo_;
};

}  // namespace

std::unique_ptr<Command> make_topo_command(CLI::App& parent, const GlobalOptions& global) {
  return std::make_unique<TopoCommand>(parent, global);
}

}  // namespace smddp::diag
