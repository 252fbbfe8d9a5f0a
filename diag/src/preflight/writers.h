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
// One drain per unhealthy node whose primary failure's action drains
// (failure_codes.h: every action but none), named by its Slurm node name.
std::vector<DrainCommand> drain_commands(const PreflightReport& report);
// The unhealthy nodes drain_commands leaves out, one line each:
// "# smddp:CODE NODE: not drained (action none): <check>: <reason>" (a
// shell comment: --print-drain's output still runs as a script; the Slurm
// prolog reads it to leave the node in service).
std::vector<std::string> undrained_notes(const PreflightReport& report);

// slurmdbd keeps a node's reason in a 255-byte column (tinytext): longer
// reasons are cut there. Ours stay within it.
inline constexpr size_t kDrainReasonMax = 255;
// "smddp:CODE <item>; <item> (+N more)": the code of the node's primary
// failure (failure_codes.h), then whole items within `limit`
// (never cut mid-word), the rest counted; safe inside a shell's double quotes.
std::string drain_reason(std::string_view code, const std::vector<std::string>& items, size_t limit = kDrainReasonMax);
// Runs the command (scontrol from PATH); returns its exit status, or -1 with
// *error set when it could not be started.
int run_drain(const DrainCommand& command, std::string* error);

}  // namespace smddp::diag
