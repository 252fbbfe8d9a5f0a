#include "preflight/writers.h"

#include <spawn.h>
#include <sys/wait.h>

#include <cerrno>
#include <cstring>
#include <fmt/format.h>

#include "shared/text.h"
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
      // Each failure ends with its code and action (docs/diag.md, "Failure codes").
      for (const CheckResult* f : failures) {
        const results::FailureCode& code = *f->failure_code();
        items.push_back(fmt::format("{}: {} [{}, {}]", f->check, f->reason, code.code, results::to_string(code.action)));
      }
      out += n.label + " | ERROR: " + join(items, "; ") + "\n";
    }
    if (verbose) {
      for (const auto& c : n.checks) {
        const results::FailureCode* code = c.failure_code();
        out += fmt::format("  {:<22} {:<4} {}{}\n", c.check, to_string(c.status), c.reason,
                           code ? fmt::format(" [{}, {}]", code->code, results::to_string(code->action)) : "");
      }
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
    if (const CheckResult* f = n.primary_failure()) {
      doc.set_property("Code", std::string(f->failure_code()->code));
      doc.set_property("Action", std::string(results::to_string(f->failure_code()->action)));
    }
    sink->write(doc.serialize());
    for (const auto& c : n.checks) {
      if (c.status == CheckStatus::Skip) continue;
      telemetry::EmfDocument cd(ns, report.timestamp_ms);
      cd.set_dimension("Host", n.label);
      cd.set_dimension("Check", c.check);
      cd.add_dimension_set({"Host", "Check"});
      cd.add_metric("CheckHealthy", "None", c.status == CheckStatus::Pass ? 1 : 0);
      cd.set_property("Reason", c.reason);
      if (const auto* f = c.failure_code()) {
        cd.set_property("Code", std::string(f->code));
        cd.set_property("Action", std::string(results::to_string(f->action)));
      }
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

namespace {

// Inside double quotes a shell still expands $, ` and \, and " ends the text.
std::string drain_safe(std::string text) {
  for (char& c : text) {
    if (c == '"' || c == '`' || c == '$' || c == '\\') c = '\'';
    if (c == '\n') c = ' ';
  }
  return text;
}

// `text` cut at the last space that leaves room for "..." within `limit`.
std::string shorten_at_word(const std::string& text, size_t limit) {
  if (text.size() <= limit) return text;
  size_t cut = text.rfind(' ', limit - 3);
  if (cut == std::string::npos || cut == 0) cut = limit - 3;
  return text.substr(0, cut) + "...";
}

}  // namespace

std::string drain_reason(std::string_view code, const std::vector<std::string>& items, size_t limit) {
  // `smddp:CODE` first, so that automation reads the code with one match.
  const std::string prefix = "smddp:" + std::string(code) + " ";
  std::string out = prefix;
  for (size_t i = 0; i < items.size(); ++i) {
    const std::string more = i + 1 < items.size() ? fmt::format(" (+{} more)", items.size() - i - 1) : "";
    const std::string item = drain_safe(items[i]);
    const std::string sep = i == 0 ? "" : "; ";
    // Whole items only, with room kept for counting the rest; the first one
    // is shortened at a word when it alone is too long.
    if (out.size() + sep.size() + item.size() + more.size() <= limit) {
      out += sep + item;
      continue;
    }
    if (i == 0) {
      out += shorten_at_word(item, limit - out.size() - more.size()) + more;
    } else {
      out += fmt::format(" (+{} more)", items.size() - i);
    }
    return out;
  }
  return out;
}

std::vector<DrainCommand> drain_commands(const PreflightReport& report) {
  std::vector<DrainCommand> out;
  for (const auto& n : report.nodes) {
    std::vector<std::string> items;
    const CheckResult* primary = n.primary_failure();
    // An action that drains nothing (none) leaves the node in service: undrained_notes names it.
    if (!primary || !results::traits(primary->failure_code()->action).drain) continue;
    // The primary failure first: a reason cut short keeps the one its code names.
    items.push_back(primary->check + ": " + primary->reason);
    for (const CheckResult* f : n.failures()) {
      if (f != primary) items.push_back(f->check + ": " + f->reason);
    }
    out.push_back(DrainCommand{n.slurm_node.empty() ? n.host : n.slurm_node, drain_reason(primary->failure_code()->code, items)});
  }
  return out;
}

std::vector<std::string> undrained_notes(const PreflightReport& report) {
  std::vector<std::string> out;
  for (const auto& n : report.nodes) {
    const CheckResult* primary = n.primary_failure();
    if (!primary || results::traits(primary->failure_code()->action).drain) continue;
    const auto* c = primary->failure_code();
    // A comment and shell-safe: --print-drain's output still runs as a script.
    out.push_back(drain_safe(fmt::format("# smddp:{} {}: not drained (action {}): {}: {}", c->code,
                                         n.slurm_node.empty() ? n.host : n.slurm_node, results::to_string(c->action),
                                         primary->check, primary->reason)));
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
