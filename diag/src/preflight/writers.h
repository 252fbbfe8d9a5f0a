// Report writers of the preflight: the per-node lines, EMF documents and
// Slurm drain commands (the JSON and textfile come from report.h and
// preflight_metrics.h).
#pragma once

#include <string>
#include <vector>

#include "preflight/report.h"

namespace smddp::diag {

// "HOST | Healthy" or "HOST | ERROR: <check>: <reason>[; <check>: <reason>...]"
// per node; with `verbose`, each check's status and reason below it.
std::string report_lines(const PreflightReport& report, bool verbose);

// One document per node (Healthy, dimension Host) and per node and check
// (CheckHealthy, dimensions Host and Check) to an EMF target (file, udp://, tcp://).
void write_emf(const PreflightReport& report, const std::string& target, const std::string& ns);

struct DrainCommand {
  std::string host;
  std::string reason;
  std::vector<std::string> argv() const;  // scontrol update nodename=H state=drain reason=...
  std::string shell() const;              // the same, quoted for a shell
};
std::vector<DrainCommand> drain_commands(const PreflightReport& report);
// Runs the command (scontrol from PATH); returns its exit status, or -1 with
// *error set when it could not be started.
int run_drain(const DrainCommand& command, std::string* error);

}  // namespace smddp::diag
