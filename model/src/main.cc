// smddp-model: a calibrated cost model of every algorithm (docs/model.md).
//   fit RESULTS.json... -o MODEL.json
//   predict MODEL.json --hosts N --ranks-per-host K [COLLECTIVE...] [-b -e -f] [--json] [--tuning-file F]
//   check MODEL.json RESULTS.json... [-b -e]
//   export MODEL.json --simai FILE | --astra-sim DIR
//   tune -o MODEL.json [--seconds S] [-e MAX]     (every rank, under mpirun/srun)
// Exit codes: 0 done, 64 bad input (one line on stderr), 70 anything else.
#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <cstdlib>
#include <iostream>

#include "smddp/common/sizes.h"
#include "smddp/config.h"
#include "smddp/error.h"
#include "smddp/tools/cli_numbers.h"
#include "smddp/tools/exit_codes.h"
#include "tune.h"
#include "verbs.h"

namespace {

namespace model = smddp::model;
namespace common = smddp::common;
namespace tools = smddp::tools;

int usage(const std::string& what) {
  // Under a launcher (tune) every rank finds the same bad input: rank 0 says it.
  for (const char* var : {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK"}) {
    if (const char* r = std::getenv(var); r && std::string(r) != "0") {
      smddp::config::yield_to_reporting_rank();
      return tools::kExitUsage;
    }
  }
  std::string line = what;
  for (char& c : line) {
    if (c == '\n') c = ' ';
  }
  std::cerr << "smddp-model: " << line << "\n";
  return tools::kExitUsage;
}

struct Sizes {
  std::string min, max, factor;
  uint64_t get(const std::string& text, const char* flag, uint64_t fallback) const {
    return text.empty() ? fallback : common::parse_size_or_throw(text, flag);
  }
};

}  // namespace

int main(int argc, char** argv) {
  CLI::App app("smddp-model: a cost model of every smddp algorithm, fitted to smddp-bench results");
  app.require_subcommand(1);

  model::FitOptions fit;
  Sizes fit_sizes;
  bool shared_cores = false, no_cma = false;
  std::string slot;
  auto* fit_cmd = app.add_subcommand("fit", "fit the model's parameters to smddp-bench -J results");
  fit_cmd->add_option("results", fit.results, "smddp-bench -J files")->required();
  fit_cmd->add_option("-o,--output", fit.output, "the model file to write")->required();
  fit_cmd->add_option("-b,--minbytes", fit_sizes.min, "only rows of at least this size");
  fit_cmd->add_option("-e,--maxbytes", fit_sizes.max, "only rows of at most this size");
  fit_cmd->add_flag("--shared-cores", shared_cores, "ranks shared cores in the runs (selector rows that need a core per rank off)");
  fit_cmd->add_flag("--no-cma", no_cma, "cross-memory attach was off (SMDDP_CMA=0) in the runs");
  fit_cmd->add_option("--shm-slot-bytes", slot, "SMDDP_SHM_SLOT_BYTES of the runs (default 1M)");

  model::PredictOptions pred;
  Sizes pred_sizes;
  auto* pred_cmd = app.add_subcommand("predict", "predict every algorithm's time and bus bandwidth on a cluster");
  pred_cmd->add_option("model", pred.model, "the model file")->required();
  pred_cmd->add_option("--hosts", pred.hosts, "hosts")->required();
  pred_cmd->add_option("--ranks-per-host", pred.ranks_per_host, "ranks on each host")->required();
  pred_cmd->add_option("collectives", pred.collectives, "collectives (default allreduce)");
  pred_cmd->add_option("-b,--minbytes", pred_sizes.min, "smallest size (default 1K)");
  pred_cmd->add_option("-e,--maxbytes", pred_sizes.max, "largest size (default 64M)");
  pred_cmd->add_option("-f,--stepfactor", pred_sizes.factor, "size multiplier (default 2)");
  pred_cmd->add_option("-d,--datatype", pred.dtype, "element type (default float)");
  pred_cmd->add_flag("--json", pred.json, "JSON instead of tables");
  pred_cmd->add_option("--tuning-file", pred.tuning_file, "write the best algorithms as an SMDDP_TUNING_FILE");

  model::CheckOptions check;
  Sizes check_sizes;
  auto* check_cmd = app.add_subcommand("check", "compare the model's predictions with measured results");
  check_cmd->add_option("model", check.model, "the model file")->required();
  check_cmd->add_option("results", check.results, "smddp-bench -J files")->required();
  check_cmd->add_option("-b,--minbytes", check_sizes.min, "only rows of at least this size");
  check_cmd->add_option("-e,--maxbytes", check_sizes.max, "only rows of at most this size");

  model::ExportOptions exp;
  std::string exp_bytes;
  auto* exp_cmd = app.add_subcommand("export", "write SimAI and ASTRA-sim inputs from the model");
  exp_cmd->add_option("model", exp.model, "the model file")->required();
  exp_cmd->add_option("--simai", exp.simai, "SimAI bus-bandwidth file (busbw.yaml) to write");
  exp_cmd->add_option("--astra-sim", exp.astra_sim, "directory for ASTRA-sim's network.yml and system.json");
  exp_cmd->add_option("--hosts", exp.hosts, "hosts (default 2)");
  exp_cmd->add_option("--ranks-per-host", exp.ranks_per_host, "ranks on each host (default 8)");
  exp_cmd->add_option("--bytes", exp_bytes, "the size the bus bandwidths are predicted at (default 64M)");

  model::TuneOptions tune;
  std::string tune_max;
  auto* tune_cmd = app.add_subcommand("tune", "probe this job's ranks within a budget and fit the model (run on every rank)");
  tune_cmd->add_option("-o,--output", tune.output, "the model file to write")->required();
  tools::seconds_option(tune_cmd->add_option("--seconds", tune.seconds, "the budget of the whole run (default 30)"), true)
      ->check(CLI::Validator(
          [](std::string& text) {
            const double v = std::strtod(text.c_str(), nullptr);  // decimal already (seconds_option)
            return v >= model::kTuneMinSeconds && v <= model::kTuneMaxSeconds
                       ? std::string()
                       : fmt::format("{} is outside the budget's range, {:g}..{:g} seconds", text,
                                     model::kTuneMinSeconds, model::kTuneMaxSeconds);
          },
          "SECONDS"));
  tune_cmd->add_option("-e,--maxbytes", tune_max, "the largest size probed (default 64M)");

  // Decimal numbers only: "--hosts 0x10" is refused, not read as 16.
  tools::decimal_numbers_only(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    return usage(e.what());
  }
  try {
    if (fit_cmd->parsed()) {
      fit.sizes = {fit_sizes.get(fit_sizes.min, "-b", 0), fit_sizes.get(fit_sizes.max, "-e", UINT64_MAX)};
      fit.schedule.dedicated_cores = !shared_cores;
      fit.schedule.cma = !no_cma;
      fit.schedule.shm_slot_bytes = fit_sizes.get(slot, "--shm-slot-bytes", fit.schedule.shm_slot_bytes);
      if (const std::string why = model::shm_slot_problem(fit.schedule.shm_slot_bytes); !why.empty()) {
        throw smddp::UsageError("--shm-slot-bytes " + why);
      }
      return model::run_fit(fit, std::cout);
    }
    if (pred_cmd->parsed()) {
      pred.min_bytes = pred_sizes.get(pred_sizes.min, "-b", pred.min_bytes);
      pred.max_bytes = pred_sizes.get(pred_sizes.max, "-e", pred.max_bytes);
      pred.factor = pred_sizes.get(pred_sizes.factor, "-f", pred.factor);
      return model::run_predict(pred, std::cout);
    }
    if (check_cmd->parsed()) {
      check.sizes = {check_sizes.get(check_sizes.min, "-b", 0), check_sizes.get(check_sizes.max, "-e", UINT64_MAX)};
      return model::run_check(check, std::cout);
    }
    if (tune_cmd->parsed()) {
      tune.max_bytes = Sizes{}.get(tune_max, "-e", tune.max_bytes);
      if (tune.max_bytes < model::tune::kMinBytes * 4 || tune.max_bytes > model::tune::kMaxBytes) {
        throw smddp::UsageError("tune: -e/--maxbytes must be 16K..1G");
      }
      return model::run_tune(tune);
    }
    exp.bytes = Sizes{}.get(exp_bytes, "--bytes", exp.bytes);
    return model::run_export(exp, std::cout);
  } catch (const smddp::UsageError& e) {
    return usage(e.what());
  } catch (const std::exception& e) {
    std::cerr << "smddp-model: " << tools::error_text(e) << "\n";
    return tools::exit_code_for(e);
  }
}
