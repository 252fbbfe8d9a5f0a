// smddp-diag baseline learn RESULTS.json... -o FILE: the median bus bandwidth
// and its spread per row kind (collective, dtype, backend, memory, size,
// ranks, hosts) over every run and node given, as a baseline smddp-bench
// --baseline gates later runs with (docs/diag.md, "Baselines").
#include <CLI/CLI.hpp>

#include <algorithm>
#include <iostream>
#include <iterator>
#include <utility>

#include "commands.h"
#include "smddp/error.h"
#include "smddp/results/baseline.h"
#include "smddp/results/rows.h"
#include "smddp/tools/atomic_file.h"
#include "smddp/tools/exit_codes.h"
#include "smddp/tools/paths.h"

namespace smddp::diag {
namespace {

class BaselineCommand final : public Command {
 public:
  BaselineCommand(CLI::App& parent, const GlobalOptions&) {
    app_ = parent.add_subcommand("baseline", "Expected bus bandwidth: learn a baseline from result files");
    learn_ = app_->add_subcommand("learn", "Median and spread per row over smddp-bench or nccl-tests JSON results");
    app_->require_subcommand(1);
    learn_->add_option("results", inputs_, "Result files (smddp-bench --json, nccl-tests -J)")->required();
    learn_->add_option("-o,--output", output_, "Baseline file to write (YAML)")->required();
    learn_->add_option("--tolerance", tolerance_, "Fraction below the median that still passes")->capture_default_str();
  }

  CLI::App* app() const override { return app_; }

  void validate() override {
    if (!(tolerance_ >= 0 && tolerance_ < 1)) throw UsageError("--tolerance must be a fraction in [0, 1)");
    tools::check_writable(output_, "-o/--output");
    // Every input is read and checked before the output is touched.
    for (const auto& path : inputs_) {
      const auto got = results::read_result_file(path);
      // A baseline holds only names its gate knows; the results reader
      // itself reads other suites' rows (hypercube_perf) as they are.
      for (const results::ResultRow& r : got) {
        for (const auto& [key, value] : {std::pair<const char*, const std::string&>{"collective", r.collective},
                                         {"dtype", r.dtype}, {"backend", r.backend}, {"memory", r.memory}}) {
          if (value.empty()) continue;
          if (const std::string why = results::unknown_name(key, value); !why.empty()) {
            throw UsageError("results '" + path + "': row " + std::to_string(r.index) + ": " + why +
                             " (a baseline can hold only names its gate knows)");
          }
        }
      }
      const size_t before = rows_.size();
      std::copy_if(got.begin(), got.end(), std::back_inserter(rows_), [](const results::ResultRow& r) { return r.busbw_gbps.has_value(); });
      if (rows_.size() == before) throw UsageError("results '" + path + "': no rows with a bus bandwidth");
    }
  }

  int run() override {
    const results::Baseline b = results::learn_baseline(rows_, tolerance_);
    tools::write_atomically(output_, results::baseline_to_yaml(b, inputs_));
    std::cout << "smddp-diag baseline: " << b.entries.size() << " entries from " << rows_.size() << " rows of "
              << inputs_.size() << " file(s) -> " << output_ << "\n";
    return tools::kExitOk;
  }

 private:
  CLI::App* app_ = nullptr;
  CLI::App* learn_ = nullptr;
  std::vector<std::string> inputs_;
  std::string output_;
  double tolerance_ = 0.25;
  std::vector<results::ResultRow> rows_;
};

}  // namespace

std::unique_ptr<Command> make_baseline_command(CLI::App& parent, const GlobalOptions& global) {
  return std::make_unique<BaselineCommand>(parent, global);
}

}  // namespace smddp::diag
