#include "preflight/writers.h"

#include <spawn.h>
#include <sys/wait.h>

#include <cerrno>
#include <cstring>
#include <fmt/format.h>

#include "common/text.h"
#include "smddp/telemetry/emf.h"

extern char** environ;

namespace smddp::diag {

std::string report_lines(const PreflightReport& report, bool verbose) {
  std::string out;
  for (const auto& n : report.nodes) {
    auto failures = n.failures();
    if (failures.empty()) {
      out += n.label + " | Healthy\n";
    } else {
      std::vector<std::string> items;
      for (const CheckResult* f : failures) items.push_back(f->check + ": " + f->reason);
      out += n.label + " | ERROR: " + join(items, "; ") + "\n";
    }
    if (verbose) {
      for (const auto& c : n.checks) out += fmt::format("  {:<22} {:<4} {}\n", c.check, to_string(c.status), c.reason);
    }
  }
  return out;
}

void write_emf(const PreflightReport& report, const std::string& target, const std::string& ns) {
  auto sink = telemetry::open_emf_sink(target);
  for (const auto& n : report.nodes) {
    telemetry::EmfDocument doc(ns, report.timestamp_ms);
    doc.set_dimension("Host", n.label);
    doc.add_dimension_set({"Host"});
    doc.add_metric("Healthy", "None", n.healthy() ? 1 : 0);
    doc.set_property("Profile", report.profile);
    nlohmann::json failures = nlohmann::json::array();
    for (const CheckResult* f : n.failures()) failures.push_back(f->check + ": " + f->reason);
    doc.set_property("Failures", failures);
    sink->write(doc.serialize());
    for (const auto& c : n.checks) {
      if (c.status == CheckStatus::Skip) continue;
      telemetry::EmfDocument cd(ns, report.timestamp_ms);
      cd.set_dimension("Host", n.label);
      cd.set_dimension("Check", c.check);
      cd.add_dimension_set({"Host", "Check"});
      cd.add_metric("CheckHealthy", "None", c.status == CheckStatus::Pass ? 1 : 0);
      cd.set_property("Reason", c.reason);
      sink->write(cd.serialize());
    }
  }
}

std::vector<std::string> DrainCommand::argv() const {
  return {"scontrol", "update", "nodename=" + host, "state=drain", "reason=" + reason};
}

std::string DrainCommand::shell() const {
  return fmt::format("scontrol update nodename={} state=drain reason=\"{}\"", shell_quote(host), reason);
}

std::vector<DrainCommand> drain_commands(const PreflightReport& report) {
  std::vector<DrainCommand> out;
  for (const auto& n : report.nodes) {
    auto failures = n.failures();
    if (failures.empty()) continue;
    std::string reason = "smddp preflight: " + failures[0]->check + ": " + failures[0]->reason;
    if (reason.size() > 180) reason = reason.substr(0, 177) + "...";
    if (failures.size() > 1) reason += fmt::format(" (+{} more)", failures.size() - 1);
    // Inside double quotes a shell still expands $, ` and \, and " ends the text.
    for (char& c : reason) {
      if (c == '"' || c == '`' || c == '$' || c == '\\') c = '\'';
      if (c == '\n') c = ' ';
    }
    out.push_back(DrainCommand{n.host, reason});
  }
  return out;
}

int run_drain(const DrainCommand& command, std::string* error) {
  std::vector<std::string> args = command.argv();
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = 0;
  int rc = posix_spawnp(&pid, argv[0], nullptr, nullptr, argv.data(), environ);
  if (rc != 0) {
    *error = fmt::format("cannot run scontrol: {}", std::strerror(rc));
    return -1;
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

}  // namespace smddp::diag
