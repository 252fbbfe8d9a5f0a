// smddp-diag codes [CODE...] [--json]: the failure-code table
// (smddp/results/failure_codes.h) with each action's Slurm drain and
// Kubernetes taint, so that scripts (the prolog, the node-health job) read
// them from the tool instead of keeping a copy. docs/diag.md, "Failure codes".
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <iostream>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "smddp/error.h"
#include "smddp/results/failure_codes.h"
#include "smddp/tools/exit_codes.h"

namespace smddp::diag {
namespace {

using results::FailureCode;

nlohmann::json code_json(const FailureCode& c) {
  const auto& t = results::traits(c.action);
  return {{"code", c.code},
          {"action", results::to_string(c.action)},
          {"remediation", c.remediation},
          {"drain", t.drain},
          {"taint", t.taint_key.empty() ? nlohmann::json(nullptr) : nlohmann::json(t.taint_key)}};
}

class CodesCommand final : public Command {
 public:
  CodesCommand(CLI::App& parent, const GlobalOptions&) {
    app_ = parent.add_subcommand("codes", "Print the failure codes: each code's action class and remediation");
    app_->add_option("code", wanted_, "Codes to print (default: all)");
    app_->add_flag("--json", json_, "Print JSON: the codes and what each action means to Slurm and Kubernetes");
  }

  CLI::App* app() const override { return app_; }

  void validate() override {
    for (const auto& w : wanted_) {
      if (const FailureCode* c = results::find_failure_code(w)) {
        rows_.push_back(c);
      } else {
        throw UsageError("unknown failure code '" + w + "' (smddp-diag codes lists them)");
      }
    }
    if (wanted_.empty()) {
      for (const auto& c : results::failure_codes()) rows_.push_back(&c);
    }
  }

  int run() override {
    if (json_) {
      nlohmann::json actions = nlohmann::json::array(), codes = nlohmann::json::array();
      for (const auto& t : results::action_traits()) {
        actions.push_back({{"action", results::to_string(t.action)},
                           {"meaning", t.meaning},
                           {"drain", t.drain},
                           {"taint", t.taint_key.empty() ? nlohmann::json(nullptr) : nlohmann::json(t.taint_key)}});
      }
      for (const FailureCode* c : rows_) codes.push_back(code_json(*c));
      std::cout << nlohmann::json{{"tool", "smddp-diag codes"}, {"actions", actions}, {"codes", codes}}.dump(2) << "\n";
      return tools::kExitOk;
    }
    for (const FailureCode* c : rows_) {
      std::cout << fmt::format("{:<38} {:<8} {}\n", c->code, results::to_string(c->action), c->remediation);
    }
    return tools::kExitOk;
  }

 private:
  CLI::App* app_ = nullptr;
  std::vector<std::string> wanted_;
  bool json_ = false;
  std::vector<const FailureCode*> rows_;
};

}  // namespace

std::unique_ptr<Command> make_codes_command(CLI::App& parent, const GlobalOptions& global) {
  return std::make_unique<CodesCommand>(parent, global);
}

}  // namespace smddp::diag
